//! A tiny watcher that reports the way real watchers do: poll every second, send a
//! heartbeat with a pulsetime slightly longer than the poll interval, and let the server
//! merge consecutive equal heartbeats into one growing event.
//!
//! ```text
//! cargo run -p aw-client-rust --example heartbeat_watcher -- --port 5666 --seconds 10
//! ```
//!
//! Options: `--host H` (default 127.0.0.1), `--port P` (default 5600), `--bucket ID`
//! (default `aw-watcher-heartbeat-example_<hostname>`), `--seconds N` (default 10; 0 runs until
//! killed), `--poll S` (default 1.0), `--api-key K`.
//!
//! The reported data is `{"app": "heartbeat_watcher", "title": "minute <n>"}`, so the event
//! grows for a minute and a new one starts when the title changes.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use std::error::Error;
use std::time::{Duration, Instant};

use aw_client_rust::aw_models::Event;
use aw_client_rust::blocking::AwClient;
use chrono::Utc;
use serde_json::{json, Map};

/// Command-line options.
struct Options {
    host: String,
    port: u16,
    bucket: Option<String>,
    seconds: u64,
    poll: f64,
    api_key: Option<String>,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options {
        host: "127.0.0.1".to_string(),
        port: aw_client_rust::DEFAULT_PORT,
        bucket: None,
        seconds: 10,
        poll: 1.0,
        api_key: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--host" => options.host = value()?,
            "--port" => options.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--bucket" => options.bucket = Some(value()?),
            "--seconds" => {
                options.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?
            }
            "--poll" => options.poll = value()?.parse().map_err(|e| format!("--poll: {e}"))?,
            "--api-key" => options.api_key = Some(value()?),
            "--help" | "-h" => {
                return Err(
                    "usage: heartbeat_watcher [--host H] [--port P] [--bucket ID] \
                            [--seconds N] [--poll S] [--api-key K]"
                        .to_string(),
                )
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if !(options.poll.is_finite() && options.poll > 0.0) {
        return Err("--poll must be a positive number of seconds".to_string());
    }
    Ok(options)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("heartbeat_watcher: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let options = parse_args()?;
    let client = AwClient::builder(&options.host, options.port, "aw-watcher-heartbeat-example")
        .api_key(options.api_key.clone())
        .build_blocking()?;
    let bucket = options
        .bucket
        .clone()
        .unwrap_or_else(|| format!("aw-watcher-heartbeat-example_{}", client.hostname));

    client.wait_for_start()?;
    client.create_bucket_simple(&bucket, "currentwindow")?;
    println!("reporting to {} bucket {bucket:?}", client.baseurl);

    // Pulsetime = poll interval + 1 s, as aw-watcher-window does: a heartbeat that arrives
    // a little late still extends the event instead of starting a new one.
    let pulsetime = options.poll + 1.0;
    let poll = Duration::from_secs_f64(options.poll);
    let started = Instant::now();
    let mut next_tick = started;
    let mut sent = 0u64;
    while options.seconds == 0 || started.elapsed() < Duration::from_secs(options.seconds) {
        let minute = started.elapsed().as_secs() / 60;
        let mut data = Map::new();
        data.insert("app".to_string(), json!("heartbeat_watcher"));
        data.insert("title".to_string(), json!(format!("minute {minute}")));
        let event = Event::new(Utc::now(), chrono::Duration::zero(), data);
        // A watcher keeps going when the server is briefly away; it just reports it.
        match client.heartbeat_returning(&bucket, &event, pulsetime) {
            Ok(stored) => {
                sent += 1;
                println!(
                    "heartbeat {sent}: event {} now {:.1} s long",
                    stored.id.unwrap_or(-1),
                    stored.duration.num_milliseconds() as f64 / 1000.0
                );
            }
            Err(e) => eprintln!("heartbeat failed: {e}"),
        }
        // Sleep to the next tick (not a fixed interval) so the cadence does not drift.
        next_tick += poll;
        let now = Instant::now();
        if next_tick > now {
            std::thread::sleep(next_tick - now);
        } else {
            next_tick = now;
        }
    }

    let events = client.get_events(&bucket, None, None, Some(5))?;
    println!("{} heartbeats sent; newest events in {bucket:?}:", sent);
    for e in events {
        println!(
            "  {} {:>8.1} s {}",
            e.timestamp.to_rfc3339(),
            e.duration.num_milliseconds() as f64 / 1000.0,
            serde_json::Value::Object(e.data)
        );
    }
    Ok(())
}
