//! Configuration files: TOML parsed, layered over the defaults and validated (the error names
//! the bad key), as `switchyard --config FILE` reads them.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    if let Ok(text) = std::str::from_utf8(input) {
        let _ = switchyard::config::Config::from_text(text, "fuzz.toml", std::iter::empty());
    }
});
