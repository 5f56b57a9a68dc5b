//! `Range` header values of artifact downloads.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    if let Ok(value) = std::str::from_utf8(input) {
        let _ = switchyard::artifacts_http::parse_range_value(value);
    }
});
