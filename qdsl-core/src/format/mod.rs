//! Storage formats ("bang per bit").
