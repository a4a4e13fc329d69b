//! Where a peer bucket is pulled into: its copy here, found or created.

use std::collections::HashMap;

use aw_models::Bucket;
use serde_json::Value;

use super::{text_of, Syncer, DEVICE_KEY, ORIGIN_KEY, SOURCE_KEY, SYNCED_FROM};
use crate::error::Result;
use crate::folder::PeerPath;
use crate::server::Server;

impl Syncer {
    /// The server bucket a peer bucket is pulled into, created if missing. Found by origin
    /// device and source id first, so a renamed host never splits a bucket (COMPATIBILITY.md, sync
    /// #10); else by the reference's name `<base>-synced-from-<host>`, so buckets the
    /// reference aw-sync created go on being used.
    pub(super) fn destination(
        &self,
        server: &dyn Server,
        source: &Bucket,
        host: &str,
        peer: &PeerPath,
        buckets: &mut HashMap<String, Bucket>,
    ) -> Result<(String, bool)> {
        let mine = |b: &Bucket| {
            text_of(b, DEVICE_KEY) == Some(peer.device_id.as_str())
                && text_of(b, SOURCE_KEY) == Some(source.id.as_str())
        };
        if let Some(found) = buckets.values().find(|b| mine(b)) {
            return Ok((found.id.clone(), false));
        }
        let base = source.id.split(SYNCED_FROM).next().unwrap_or(&source.id);
        let mut id = format!("{base}{SYNCED_FROM}{host}");
        if let Some(existing) = buckets.get(&id) {
            match text_of(existing, DEVICE_KEY) {
                // Another device with the same hostname: keep them apart.
                Some(other) if other != peer.device_id => id = format!("{id}-{}", peer.device_id),
                _ => return Ok((id, false)),
            }
            if buckets.contains_key(&id) {
                return Ok((id, false));
            }
        }
        let mut bucket = source.clone();
        bucket.id = id.clone();
        bucket.bid = None;
        bucket.events = None;
        bucket
            .data
            .insert(ORIGIN_KEY.into(), Value::String(host.to_string()));
        bucket
            .data
            .insert(DEVICE_KEY.into(), Value::String(peer.device_id.clone()));
        bucket
            .data
            .insert(SOURCE_KEY.into(), Value::String(source.id.clone()));
        server.create_bucket(&bucket)?;
        log::info!("Created bucket '{id}' for data from {host}");
        buckets.insert(id.clone(), bucket);
        Ok((id, true))
    }
}
