//! The calls of our server that the `aw-sync` program makes to sync by days (ours only:
//! the reference answers 404): day digests, the days applied here, applying one, scrubbing.

use serde::Serialize;
use serde_json::Value;

use crate::error::ClientError;
use crate::AwClient;

impl AwClient {
    /// The digest of each day of a bucket that has events (`GET /api/0/buckets/<id>/days`,
    /// ours only: what aw-sync compares to carry deletions and edits).
    pub async fn get_day_digests(&self, bucketname: &str) -> Result<Value, ClientError> {
        self.get(self.bucket_url(bucketname)?.lit("days").build()?)
            .await?
            .json()
    }

    /// The days of another device's bucket applied to its pulled copy here, with their
    /// digests (`GET /api/0/sync/applied`, ours only).
    pub async fn get_applied_days(&self, device: &str, source: &str) -> Result<Value, ClientError> {
        let url = self
            .api()
            .lit("sync")
            .lit("applied")
            .query("device", device)
            .query("source", source);
        self.get(url.build()?).await?.json()
    }

    /// Applies one day of another device's bucket to its pulled copy here
    /// (`POST /api/0/sync/apply`, ours only); answers what it did.
    pub async fn apply_pulled_day<B: Serialize + ?Sized>(
        &self,
        day: &B,
    ) -> Result<Value, ClientError> {
        let url = self.api().lit("sync").lit("apply").build()?;
        self.post(url, day).await?.json()
    }

    /// Leaves no removed text readable beside the database (`POST /api/0/sync/scrub`, ours
    /// only): after a pull removed text another device removed from its history.
    pub async fn scrub(&self) -> Result<(), ClientError> {
        let url = self.api().lit("sync").lit("scrub").build()?;
        self.post(url, &Value::Null).await?;
        Ok(())
    }
}
