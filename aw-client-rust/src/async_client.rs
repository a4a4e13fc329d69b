//! The async client: one method per API call, typed with `aw-models`.
//!
//! Method names and argument lists follow the reference `aw-client-rust` so that existing
//! watchers compile unchanged; a few extra methods (`get_event`, `delete_setting`,
//! `ensure_bucket`, `*_returning`, …) expose what the API offers beyond that.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aw_models::{timestamp, Bucket, BucketsExport, Event, Info, Query, TimeInterval};
use chrono::{DateTime, Utc};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::builder::{AwClientBuilder, ClientParts, IntoApiKey};
use crate::error::ClientError;
use crate::url::ApiUrl;

/// How long [`AwClient::wait_for_start`] waits, as in the reference client.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(10);

/// Async client for one ActivityWatch server.
///
/// Cheap to clone (clones share the connection pool). The public fields are read on every
/// call, so changing them redirects later requests.
#[derive(Clone, Debug)]
pub struct AwClient {
    http: reqwest::Client,
    /// The server's base URL, e.g. `http://127.0.0.1:5600/`.
    pub baseurl: Url,
    /// This client's name, written as `client` into buckets made by `create_bucket_simple`.
    pub name: String,
    /// This machine's hostname, written into buckets made by `create_bucket_simple`.
    pub hostname: String,
}

/// A response that passed the status check.
pub(crate) struct Reply {
    url: String,
    status: StatusCode,
    body: Vec<u8>,
}

impl Reply {
    pub(crate) fn json<T: DeserializeOwned>(&self) -> Result<T, ClientError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| ClientError::decode(&self.url, e, &self.body))
    }
}

impl AwClientBuilder {
    /// Builds the async client.
    pub fn build(self) -> Result<AwClient, ClientError> {
        Ok(AwClient::from_parts(self.into_parts()?))
    }
}

impl AwClient {
    /// A client for `http://host:port/` named `name`, with the default 120 s timeout.
    pub fn new(host: &str, port: u16, name: &str) -> Result<AwClient, ClientError> {
        AwClientBuilder::new(host, port, name).build()
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
            .build()
    }

    /// A builder for timeouts, API key and hostname.
    pub fn builder(host: &str, port: u16, name: &str) -> AwClientBuilder {
        AwClientBuilder::new(host, port, name)
    }

    /// The port of a server in testing mode (5666), as watchers' `--testing` flags use.
    pub const fn testing_port() -> u16 {
        crate::TESTING_PORT
    }

    /// The port of a normal server (5600).
    pub const fn default_port() -> u16 {
        crate::DEFAULT_PORT
    }

    pub(crate) fn from_parts(parts: ClientParts) -> Self {
        AwClient {
            http: parts.http,
            baseurl: parts.baseurl,
            name: parts.name,
            hostname: parts.hostname,
        }
    }

    pub(crate) fn api(&self) -> ApiUrl {
        ApiUrl::new(&self.baseurl)
    }

    pub(crate) fn bucket_url(&self, bucket_id: &str) -> Result<ApiUrl, ClientError> {
        self.api().lit("buckets").seg("bucket id", bucket_id)
    }

    /// Sends one request; 2xx and 304 pass, every other status becomes [`ClientError::Http`].
    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<Vec<u8>>,
    ) -> Result<Reply, ClientError> {
        let url_text = url.to_string();
        let mut request = self.http.request(method.clone(), url);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body);
        }
        let response = request
            .send()
            .await
            .map_err(|e| ClientError::from_transport(&url_text, e))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| ClientError::from_transport(&url_text, e))?
            .to_vec();
        if status.is_success() || status == StatusCode::NOT_MODIFIED {
            Ok(Reply {
                url: url_text,
                status,
                body,
            })
        } else {
            Err(ClientError::from_status(
                method.as_str(),
                &url_text,
                status.as_u16(),
                &body,
            ))
        }
    }

    pub(crate) async fn get(&self, url: Url) -> Result<Reply, ClientError> {
        self.send(Method::GET, url, None).await
    }

    pub(crate) async fn post<B: Serialize + ?Sized>(
        &self,
        url: Url,
        body: &B,
    ) -> Result<Reply, ClientError> {
        let body = serde_json::to_vec(body)
            .map_err(|e| ClientError::invalid("request body", "", e.to_string()))?;
        self.send(Method::POST, url, Some(body)).await
    }

    async fn delete(&self, url: Url) -> Result<Reply, ClientError> {
        self.send(Method::DELETE, url, None).await
    }

    /// Server name, version, testing flag and device id (`GET /api/0/info`).
    pub async fn get_info(&self) -> Result<Info, ClientError> {
        self.get(self.api().lit("info").build()?).await?.json()
    }

    /// All buckets by id (`GET /api/0/buckets/`), with their `metadata`.
    pub async fn get_buckets(&self) -> Result<HashMap<String, Bucket>, ClientError> {
        self.get(self.api().lit("buckets").slash().build()?)
            .await?
            .json()
    }

    /// One bucket (`GET /api/0/buckets/<id>`); an unknown id is an HTTP 404 error.
    pub async fn get_bucket(&self, bucketname: &str) -> Result<Bucket, ClientError> {
        self.get(self.bucket_url(bucketname)?.build()?)
            .await?
            .json()
    }

    /// Creates `bucket` under `bucket.id`. An existing bucket (HTTP 304) is not an error, so
    /// watchers can call this on every start.
    pub async fn create_bucket(&self, bucket: &Bucket) -> Result<(), ClientError> {
        self.ensure_bucket(bucket).await.map(|_| ())
    }

    /// Like [`create_bucket`](Self::create_bucket), telling whether the bucket was created
    /// (`true`) or already existed (`false`).
    pub async fn ensure_bucket(&self, bucket: &Bucket) -> Result<bool, ClientError> {
        let reply = self
            .post(self.bucket_url(&bucket.id)?.build()?, bucket)
            .await?;
        Ok(reply.status != StatusCode::NOT_MODIFIED)
    }

    /// Creates a bucket of `buckettype` with this client's name and hostname (no-op if it
    /// exists).
    pub async fn create_bucket_simple(
        &self,
        bucketname: &str,
        buckettype: &str,
    ) -> Result<(), ClientError> {
        self.create_bucket(&self.simple_bucket(bucketname, buckettype))
            .await
    }

    pub(crate) fn simple_bucket(&self, bucketname: &str, buckettype: &str) -> Bucket {
        Bucket::new(bucketname, buckettype, &self.name, &self.hostname)
    }

    /// Deletes a bucket and all its events.
    pub async fn delete_bucket(&self, bucketname: &str) -> Result<(), ClientError> {
        self.delete(self.bucket_url(bucketname)?.build()?).await?;
        Ok(())
    }

    /// Events overlapping `[start, stop]` (either end open when `None`), newest first, at
    /// most `limit` of them (all when `None`). The server clips events to the range.
    pub async fn get_events(
        &self,
        bucketname: &str,
        start: Option<DateTime<Utc>>,
        stop: Option<DateTime<Utc>>,
        limit: Option<u64>,
    ) -> Result<Vec<Event>, ClientError> {
        let mut url = self.bucket_url(bucketname)?.lit("events");
        if let Some(start) = start {
            url = url.query("start", &timestamp::format(&start));
        }
        if let Some(stop) = stop {
            url = url.query("end", &timestamp::format(&stop));
        }
        if let Some(limit) = limit {
            url = url.query("limit", &limit.to_string());
        }
        self.get(url.build()?).await?.json()
    }

    /// One event by id. Unknown ids are an HTTP error (the reference server answers 500).
    pub async fn get_event(&self, bucketname: &str, event_id: i64) -> Result<Event, ClientError> {
        let url = self
            .bucket_url(bucketname)?
            .lit("events")
            .seg("event id", &event_id.to_string())?
            .build()?;
        self.get(url).await?.json()
    }

    /// Inserts one event (an event with an `id` replaces the stored event with that id).
    pub async fn insert_event(&self, bucketname: &str, event: &Event) -> Result<(), ClientError> {
        self.insert_events_returning(bucketname, std::slice::from_ref(event))
            .await
            .map(|_| ())
    }

    /// Inserts events in order (events with an `id` replace the stored ones).
    pub async fn insert_events(
        &self,
        bucketname: &str,
        events: Vec<Event>,
    ) -> Result<(), ClientError> {
        self.insert_events_returning(bucketname, &events)
            .await
            .map(|_| ())
    }

    /// Inserts events and returns them as stored, with their new ids, in input order.
    pub async fn insert_events_returning(
        &self,
        bucketname: &str,
        events: &[Event],
    ) -> Result<Vec<Event>, ClientError> {
        let url = self.bucket_url(bucketname)?.lit("events").build()?;
        self.post(url, events).await?.json()
    }

    /// Sends a heartbeat: the server extends the bucket's last event when `event` has the
    /// same data and starts no later than `pulsetime` seconds after that event ends, and
    /// inserts it as a new event otherwise.
    pub async fn heartbeat(
        &self,
        bucketname: &str,
        event: &Event,
        pulsetime: f64,
    ) -> Result<(), ClientError> {
        self.heartbeat_returning(bucketname, event, pulsetime)
            .await
            .map(|_| ())
    }

    /// Like [`heartbeat`](Self::heartbeat), returning the resulting stored event (the merged
    /// one, or the new one), with its id.
    pub async fn heartbeat_returning(
        &self,
        bucketname: &str,
        event: &Event,
        pulsetime: f64,
    ) -> Result<Event, ClientError> {
        if !pulsetime.is_finite() {
            return Err(ClientError::invalid(
                "pulsetime",
                &pulsetime.to_string(),
                "must be a finite number of seconds",
            ));
        }
        let url = self
            .bucket_url(bucketname)?
            .lit("heartbeat")
            .query("pulsetime", &pulsetime.to_string())
            .build()?;
        self.post(url, event).await?.json()
    }

    /// Deletes one event (no error if the id does not exist).
    pub async fn delete_event(&self, bucketname: &str, event_id: i64) -> Result<(), ClientError> {
        let url = self
            .bucket_url(bucketname)?
            .lit("events")
            .seg("event id", &event_id.to_string())?
            .build()?;
        self.delete(url).await?;
        Ok(())
    }

    /// Number of events in the bucket.
    pub async fn get_event_count(&self, bucketname: &str) -> Result<i64, ClientError> {
        self.get_event_count_range(bucketname, None, None).await
    }

    /// Number of events, passing `start`/`end` to the server (the reference server ignores
    /// them and counts all events; the Python server honours them).
    pub async fn get_event_count_range(
        &self,
        bucketname: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
    ) -> Result<i64, ClientError> {
        let mut url = self.bucket_url(bucketname)?.lit("events").lit("count");
        if let Some(start) = start {
            url = url.query("start", &timestamp::format(&start));
        }
        if let Some(end) = end {
            url = url.query("end", &timestamp::format(&end));
        }
        let reply = self.get(url.build()?).await?;
        std::str::from_utf8(&reply.body)
            .ok()
            .and_then(|text| text.trim().parse::<i64>().ok())
            .ok_or_else(|| ClientError::decode(&reply.url, "expected an integer", &reply.body))
    }

    /// Runs a query program once per time period; returns one result per period, in order.
    /// The program's lines are sent as separate strings, as every client does.
    pub async fn query(
        &self,
        query: &str,
        timeperiods: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    ) -> Result<Vec<Value>, ClientError> {
        let expected = timeperiods.len();
        let body = Query {
            timeperiods: timeperiods
                .into_iter()
                .map(|(start, end)| TimeInterval::new(start, end))
                .collect(),
            query: query.split('\n').map(str::to_string).collect(),
        };
        let reply = self
            .post(self.api().lit("query").slash().build()?, &body)
            .await?;
        let results: Vec<Value> = reply.json()?;
        if results.len() != expected {
            return Err(ClientError::decode(
                &reply.url,
                format!(
                    "expected {expected} results (one per time period), got {}",
                    results.len()
                ),
                &reply.body,
            ));
        }
        Ok(results)
    }

    /// One setting's value; a missing key is `Value::Null` (that is what the server answers).
    pub async fn get_setting(&self, key: &str) -> Result<Value, ClientError> {
        let url = self
            .api()
            .lit("settings")
            .seg("setting key", key)?
            .build()?;
        self.get(url).await?.json()
    }

    /// All settings as a JSON object. Unlike the reference client this does not require any
    /// particular keys to be present.
    pub async fn get_settings(&self) -> Result<Map<String, Value>, ClientError> {
        self.get(self.api().lit("settings").build()?).await?.json()
    }

    /// Stores any JSON-serialisable value under `key` (overwriting).
    pub async fn set_setting<T: Serialize + ?Sized>(
        &self,
        key: &str,
        value: &T,
    ) -> Result<(), ClientError> {
        let url = self
            .api()
            .lit("settings")
            .seg("setting key", key)?
            .build()?;
        self.post(url, value).await?;
        Ok(())
    }

    /// Removes a setting (no error if it does not exist).
    pub async fn delete_setting(&self, key: &str) -> Result<(), ClientError> {
        let url = self
            .api()
            .lit("settings")
            .seg("setting key", key)?
            .build()?;
        self.delete(url).await?;
        Ok(())
    }

    /// One bucket with all its events, as an import-ready document.
    pub async fn export_bucket(&self, bucketname: &str) -> Result<BucketsExport, ClientError> {
        self.get(self.bucket_url(bucketname)?.lit("export").build()?)
            .await?
            .json()
    }

    /// Every bucket with all its events.
    pub async fn export_all(&self) -> Result<BucketsExport, ClientError> {
        self.get(self.api().lit("export").build()?).await?.json()
    }

    /// Imports an export document: new buckets are created, events of existing buckets are
    /// merged (events already present are skipped by the server).
    pub async fn import(&self, buckets: BucketsExport) -> Result<(), ClientError> {
        self.post(self.api().lit("import").build()?, &buckets)
            .await?;
        Ok(())
    }

    /// Waits up to 10 s for the server to answer (any HTTP answer counts), retrying with a
    /// delay that starts at 100 ms and doubles. Watchers call this at startup, when they may
    /// have been launched together with the server.
    pub async fn wait_for_start(&self) -> Result<(), ClientError> {
        self.wait_for_start_timeout(DEFAULT_START_TIMEOUT).await
    }

    /// [`wait_for_start`](Self::wait_for_start) with a custom limit.
    pub async fn wait_for_start_timeout(&self, timeout: Duration) -> Result<(), ClientError> {
        let url = self.api().lit("info").build()?;
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            let remaining = timeout.saturating_sub(started.elapsed());
            let attempt = self
                .http
                .get(url.clone())
                .timeout(remaining.max(Duration::from_millis(1)))
                .send()
                .await;
            let error = match attempt {
                Ok(_) => return Ok(()),
                Err(e) => ClientError::from_transport(url.as_str(), e),
            };
            let remaining = timeout.saturating_sub(started.elapsed());
            if remaining.is_zero() {
                return Err(ClientError::NotStarted {
                    url: url.to_string(),
                    waited: started.elapsed(),
                    last_error: Box::new(error),
                });
            }
            tokio::time::sleep(delay.min(remaining)).await;
            delay = delay.saturating_mul(2);
        }
    }
}
