//! The blocking client: the async client's methods for code without an async runtime
//! (most watchers).
//!
//! Design: each client owns one current-thread Tokio runtime running on one background
//! thread (shared by the client's clones, stopped when the last clone is dropped). A call
//! hands the async request to that thread and waits for the answer on a plain channel.
//! Compared with building a runtime per call this keeps connections pooled and costs one
//! thread hop per call; compared with blocking on a runtime in the caller's thread it works
//! from anywhere, including from inside another async runtime (where `block_on` and
//! `reqwest::blocking` panic) — though blocking an async executor thread is still a bad idea,
//! and a deadlock if that executor is what serves the requests. The runtime is driven
//! continuously, so pooled connections the server closed are noticed before reuse.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use aw_models::{Bucket, BucketsExport, Event, Info};
use chrono::{DateTime, Utc};
use reqwest::Url;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::builder::{AwClientBuilder, ClientParts, IntoApiKey};
use crate::error::ClientError;

/// A request in flight, ready to be spawned on the worker's runtime.
type Job = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Blocking client for one ActivityWatch server; same methods as the async
/// [`AwClient`](crate::AwClient), without `.await`.
///
/// Clones share the background thread and the connection pool. The public fields are read
/// on every call, so changing them redirects later requests.
#[derive(Clone, Debug)]
pub struct AwClient {
    http: reqwest::Client,
    jobs: UnboundedSender<Job>,
    /// The server's base URL, e.g. `http://127.0.0.1:5600/`.
    pub baseurl: Url,
    /// This client's name, written as `client` into buckets made by `create_bucket_simple`.
    pub name: String,
    /// This machine's hostname, written into buckets made by `create_bucket_simple`.
    pub hostname: String,
}

/// Starts the background thread with its runtime; it runs until every sender is dropped.
fn start_worker() -> Result<UnboundedSender<Job>, ClientError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ClientError::Runtime)?;
    let (jobs, mut queue) = unbounded_channel::<Job>();
    std::thread::Builder::new()
        .name("aw-client-blocking".to_string())
        .spawn(move || {
            runtime.block_on(async move {
                // Each call runs as its own task so calls from several threads overlap.
                while let Some(job) = queue.recv().await {
                    tokio::spawn(job);
                }
            });
        })
        .map_err(ClientError::Runtime)?;
    Ok(jobs)
}

impl AwClientBuilder {
    /// Builds the blocking client. Its async core is never handed out: an async client used
    /// elsewhere would share its connection pool across runtimes, which hyper does not
    /// support.
    pub fn build_blocking(self) -> Result<AwClient, ClientError> {
        let parts = self.into_parts()?;
        let jobs = start_worker()?;
        Ok(AwClient {
            http: parts.http,
            jobs,
            baseurl: parts.baseurl,
            name: parts.name,
            hostname: parts.hostname,
        })
    }
}

impl AwClient {
    /// A client for `http://host:port/` named `name`, with the default 120 s timeout.
    pub fn new(host: &str, port: u16, name: &str) -> Result<AwClient, ClientError> {
        AwClientBuilder::new(host, port, name).build_blocking()
    }

    /// Like [`new`](Self::new), sending `Authorization: Bearer <key>` on every request.
    /// Accepts `&str`, `String` or an `Option` of them (`None`/empty = no key).
    pub fn new_with_api_key(
        host: &str,
        port: u16,
        name: &str,
        api_key: impl IntoApiKey,
    ) -> Result<AwClient, ClientError> {
        AwClientBuilder::new(host, port, name)
            .api_key(api_key)
            .build_blocking()
    }

    /// A builder for timeouts, API key and hostname (finish with `build_blocking`).
    pub fn builder(host: &str, port: u16, name: &str) -> AwClientBuilder {
        AwClientBuilder::new(host, port, name)
    }

    /// The port of a server in testing mode (5666).
    pub const fn testing_port() -> u16 {
        crate::TESTING_PORT
    }

    /// The port of a normal server (5600).
    pub const fn default_port() -> u16 {
        crate::DEFAULT_PORT
    }

    fn as_async(&self) -> crate::AwClient {
        crate::AwClient::from_parts(ClientParts {
            http: self.http.clone(),
            baseurl: self.baseurl.clone(),
            name: self.name.clone(),
            hostname: self.hostname.clone(),
        })
    }

    /// Runs `call` on the background runtime and waits for its result.
    fn run<T, F, Fut>(&self, call: F) -> Result<T, ClientError>
    where
        F: FnOnce(crate::AwClient) -> Fut,
        Fut: Future<Output = Result<T, ClientError>> + Send + 'static,
        T: Send + 'static,
    {
        let future = call(self.as_async());
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let job: Job = Box::pin(async move {
            // The caller may have given up (it cannot, but if it did the result is moot).
            let _ = reply.send(future.await);
        });
        self.jobs.send(job).map_err(|_| ClientError::WorkerGone)?;
        answer.recv().map_err(|_| ClientError::WorkerGone)?
    }

    /// Server name, version, testing flag and device id.
    pub fn get_info(&self) -> Result<Info, ClientError> {
        self.run(|c| async move { c.get_info().await })
    }

    /// All buckets by id, with their `metadata`.
    pub fn get_buckets(&self) -> Result<HashMap<String, Bucket>, ClientError> {
        self.run(|c| async move { c.get_buckets().await })
    }

    /// One bucket; an unknown id is an HTTP 404 error.
    pub fn get_bucket(&self, bucketname: &str) -> Result<Bucket, ClientError> {
        let id = bucketname.to_string();
        self.run(|c| async move { c.get_bucket(&id).await })
    }

    /// Creates `bucket` under `bucket.id`; an existing bucket is not an error.
    pub fn create_bucket(&self, bucket: &Bucket) -> Result<(), ClientError> {
        self.ensure_bucket(bucket).map(|_| ())
    }

    /// Creates `bucket`, telling whether it was created (`true`) or already existed.
    pub fn ensure_bucket(&self, bucket: &Bucket) -> Result<bool, ClientError> {
        let bucket = bucket.clone();
        self.run(|c| async move { c.ensure_bucket(&bucket).await })
    }

    /// Creates a bucket of `buckettype` with this client's name and hostname (no-op if it
    /// exists).
    pub fn create_bucket_simple(
        &self,
        bucketname: &str,
        buckettype: &str,
    ) -> Result<(), ClientError> {
        let bucket = self.as_async().simple_bucket(bucketname, buckettype);
        self.run(|c| async move { c.create_bucket(&bucket).await })
    }

    /// Deletes a bucket and all its events.
    pub fn delete_bucket(&self, bucketname: &str) -> Result<(), ClientError> {
        let id = bucketname.to_string();
        self.run(|c| async move { c.delete_bucket(&id).await })
    }

    /// Events overlapping `[start, stop]`, newest first, at most `limit` (all when `None`).
    pub fn get_events(
        &self,
        bucketname: &str,
        start: Option<DateTime<Utc>>,
        stop: Option<DateTime<Utc>>,
        limit: Option<u64>,
    ) -> Result<Vec<Event>, ClientError> {
        let id = bucketname.to_string();
        self.run(|c| async move { c.get_events(&id, start, stop, limit).await })
    }

    /// One event by id; unknown ids are an HTTP error.
    pub fn get_event(&self, bucketname: &str, event_id: i64) -> Result<Event, ClientError> {
        let id = bucketname.to_string();
        self.run(|c| async move { c.get_event(&id, event_id).await })
    }

    /// Inserts one event.
    pub fn insert_event(&self, bucketname: &str, event: &Event) -> Result<(), ClientError> {
        self.insert_events_returning(bucketname, std::slice::from_ref(event))
            .map(|_| ())
    }

    /// Inserts events in order.
    pub fn insert_events(&self, bucketname: &str, events: Vec<Event>) -> Result<(), ClientError> {
        let id = bucketname.to_string();
        self.run(|c| async move { c.insert_events(&id, events).await })
    }

    /// Inserts events and returns them as stored, with their ids, in input order.
    pub fn insert_events_returning(
        &self,
        bucketname: &str,
        events: &[Event],
    ) -> Result<Vec<Event>, ClientError> {
        let id = bucketname.to_string();
        let events = events.to_vec();
        self.run(|c| async move { c.insert_events_returning(&id, &events).await })
    }

    /// Sends a heartbeat (merged by the server into the last event when the data is equal
    /// and it comes within `pulsetime` seconds of that event's end).
    pub fn heartbeat(
        &self,
        bucketname: &str,
        event: &Event,
        pulsetime: f64,
    ) -> Result<(), ClientError> {
        self.heartbeat_returning(bucketname, event, pulsetime)
            .map(|_| ())
    }

    /// Like [`heartbeat`](Self::heartbeat), returning the resulting stored event.
    pub fn heartbeat_returning(
        &self,
        bucketname: &str,
        event: &Event,
        pulsetime: f64,
    ) -> Result<Event, ClientError> {
        let id = bucketname.to_string();
        let event = event.clone();
        self.run(|c| async move { c.heartbeat_returning(&id, &event, pulsetime).await })
    }

    /// Deletes one event (no error if the id does not exist).
    pub fn delete_event(&self, bucketname: &str, event_id: i64) -> Result<(), ClientError> {
        let id = bucketname.to_string();
        self.run(|c| async move { c.delete_event(&id, event_id).await })
    }

    /// Number of events in the bucket.
    pub fn get_event_count(&self, bucketname: &str) -> Result<i64, ClientError> {
        self.get_event_count_range(bucketname, None, None)
    }

    /// Number of events, passing `start`/`end` to the server (which may ignore them).
    pub fn get_event_count_range(
        &self,
        bucketname: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
    ) -> Result<i64, ClientError> {
        let id = bucketname.to_string();
        self.run(|c| async move { c.get_event_count_range(&id, start, end).await })
    }

    /// Runs a query program once per time period; one result per period, in order.
    pub fn query(
        &self,
        query: &str,
        timeperiods: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    ) -> Result<Vec<Value>, ClientError> {
        let query = query.to_string();
        self.run(|c| async move { c.query(&query, timeperiods).await })
    }

    /// The digest of each day of a bucket (ours only; see the async client).
    pub fn get_day_digests(&self, bucketname: &str) -> Result<Value, ClientError> {
        let bucket = bucketname.to_string();
        self.run(|c| async move { c.get_day_digests(&bucket).await })
    }

    /// The days of another device's bucket applied here (ours only; see the async client).
    pub fn get_applied_days(&self, device: &str, source: &str) -> Result<Value, ClientError> {
        let (device, source) = (device.to_string(), source.to_string());
        self.run(|c| async move { c.get_applied_days(&device, &source).await })
    }

    /// Applies one day of another device's bucket to its copy here (ours only).
    pub fn apply_pulled_day<B: Serialize + ?Sized>(&self, day: &B) -> Result<Value, ClientError> {
        let body = serde_json::to_value(day)
            .map_err(|e| ClientError::invalid("request body", "", e.to_string()))?;
        self.run(|c| async move { c.apply_pulled_day(&body).await })
    }

    /// Scrubs the server's WAL and journal (ours only; see the async client).
    pub fn scrub(&self) -> Result<(), ClientError> {
        self.run(|c| async move { c.scrub().await })
    }

    /// One setting's value; a missing key is `Value::Null`.
    pub fn get_setting(&self, key: &str) -> Result<Value, ClientError> {
        let key = key.to_string();
        self.run(|c| async move { c.get_setting(&key).await })
    }

    /// All settings as a JSON object (no particular keys required).
    pub fn get_settings(&self) -> Result<Map<String, Value>, ClientError> {
        self.run(|c| async move { c.get_settings().await })
    }

    /// Stores any JSON-serialisable value under `key`.
    pub fn set_setting<T: Serialize + ?Sized>(
        &self,
        key: &str,
        value: &T,
    ) -> Result<(), ClientError> {
        let key = key.to_string();
        let value = serde_json::to_value(value)
            .map_err(|e| ClientError::invalid("setting value", "", e.to_string()))?;
        self.run(|c| async move { c.set_setting(&key, &value).await })
    }

    /// Removes a setting (no error if it does not exist).
    pub fn delete_setting(&self, key: &str) -> Result<(), ClientError> {
        let key = key.to_string();
        self.run(|c| async move { c.delete_setting(&key).await })
    }

    /// One bucket with all its events, as an import-ready document.
    pub fn export_bucket(&self, bucketname: &str) -> Result<BucketsExport, ClientError> {
        let id = bucketname.to_string();
        self.run(|c| async move { c.export_bucket(&id).await })
    }

    /// Every bucket with all its events.
    pub fn export_all(&self) -> Result<BucketsExport, ClientError> {
        self.run(|c| async move { c.export_all().await })
    }

    /// Imports an export document (new buckets created, existing ones merged).
    pub fn import(&self, buckets: BucketsExport) -> Result<(), ClientError> {
        self.run(|c| async move { c.import(buckets).await })
    }

    /// Waits up to 10 s for the server to answer, retrying with a doubling delay.
    pub fn wait_for_start(&self) -> Result<(), ClientError> {
        self.run(|c| async move { c.wait_for_start().await })
    }

    /// [`wait_for_start`](Self::wait_for_start) with a custom limit.
    pub fn wait_for_start_timeout(&self, timeout: Duration) -> Result<(), ClientError> {
        self.run(|c| async move { c.wait_for_start_timeout(timeout).await })
    }
}
