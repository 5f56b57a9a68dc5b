//! The PostgreSQL change feed's notices, as a plain `LISTEN` on the database hears them: a
//! steady stream of changes travels in notices spaced at least `SPACING` apart (each notice is
//! a transaction of its own, so one per change would cost a commit per change), and no change
//! is lost on the way.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use sqlx::postgres::PgListener;
use switchyard_contract::{Changed, InvocationId};
use switchyard_store::StoreOptions;
use switchyard_store::feed::{CHANNEL, SPACING};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_of_changes_travels_in_spaced_notices_and_none_is_lost() {
    let url = switchyard_tests::pg::database().await;
    let stores = switchyard_store::connect(&url, &StoreOptions::default()).await.unwrap();
    let feed = stores.feed.unwrap_or_else(|| panic!("PostgreSQL has a change feed"));
    let mut listener = PgListener::connect(&url).await.unwrap();
    listener.listen(CHANNEL).await.unwrap();

    // 100 changes, one every 0.3 ms: faster than a notice's round trip, slower than a burst.
    let id = InvocationId::new();
    let started = Instant::now();
    for seq in 1..=100 {
        feed.announce(Changed::Invocation { id, seq });
        std::thread::sleep(Duration::from_micros(300));
    }
    let announcing = started.elapsed();

    let mut heard = HashSet::new();
    let mut notices = 0;
    while heard.len() < 100 {
        let notice = tokio::time::timeout(Duration::from_secs(5), listener.recv())
            .await
            .unwrap_or_else(|_| panic!("only {} of 100 changes heard after {notices} notices", heard.len()))
            .unwrap();
        notices += 1;
        let (_, changes) = notice.payload().split_once('|').unwrap_or_else(|| panic!("{}", notice.payload()));
        heard.extend(changes.split(',').map(str::to_string));
    }
    let expected: HashSet<String> = (1..=100).map(|seq| format!("{id}:{seq}")).collect();
    assert_eq!(heard, expected, "every change, and nothing else");
    // At most one notice per SPACING while announcing, one at the start and one for the rest.
    let most = announcing.as_millis() / SPACING.as_millis() + 2;
    assert!(notices as u128 <= most, "{notices} notices for 100 changes in {announcing:?} (at most {most})");
    println!("100 changes over {announcing:?} travelled in {notices} notices");
}
