//! Server-sent events from upstream agents: the input is cut into reads at the positions its
//! first bytes name, so events, lines and characters split across reads are exercised.
#![no_main]

use futures::StreamExt;

libfuzzer_sys::fuzz_target!(|input: &[u8]| {
    let Some((&cuts, rest)) = input.split_first() else { return };
    let step = usize::from(cuts % 17) + 1;
    let chunks: Vec<reqwest::Result<bytes::Bytes>> =
        rest.chunks(step).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
    let events = switchyard_a2a::client::sse_data(futures::stream::iter(chunks));
    let _: Vec<_> = futures::executor::block_on(events.collect());
});
