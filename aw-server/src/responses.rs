//! Response bodies, all in memory: JSON text built by the server, empty success bodies,
//! export downloads (and, through [`in_memory`], error bodies and embedded dashboard files).

use rocket::http::{ContentType, Status};
use rocket::response::{self, Body, Responder};
use rocket::{Request, Response};
use std::io::Cursor;

/// The largest chunk of a body Rocket hands to hyper at once.
const MAX_CHUNK: usize = 1 << 20;

/// A response whose body is already in memory, handed to hyper in one chunk (up to 1 MiB).
///
/// Rocket passes a body to hyper through a channel in chunks of 4 KiB by default, and hyper
/// writes each chunk to the socket as it arrives: a 15 KB list of 100 events went out in four
/// writes, and the client woke up for each. In one chunk it is one write; a 90 MB export
/// takes 90 writes instead of 22,000.
pub fn in_memory<T>(body: T) -> response::Builder<'static>
where
    T: AsRef<[u8]> + Send + Sync + Unpin + 'static,
{
    let len = body.as_ref().len();
    let mut builder = Response::build();
    builder
        .sized_body(len, Cursor::new(body))
        .max_chunk_size(len.clamp(Body::DEFAULT_MAX_CHUNK, MAX_CHUNK));
    builder
}

/// A JSON body already serialised (often spliced from stored event text, never re-parsed).
pub struct JsonText(pub String);

impl<'r> Responder<'r, 'static> for JsonText {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        in_memory(self.0).header(ContentType::JSON).ok()
    }
}

/// A success with no payload: the given status and an empty body (`Content-Length: 0`).
pub struct Empty(pub Status);

impl<'r> Responder<'r, 'static> for Empty {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        in_memory(Vec::new()).status(self.0).ok()
    }
}

/// An export document offered as a download (`Content-Disposition: attachment`), with no
/// content type, as the reference sends it.
pub struct Attachment {
    /// The file name offered to the browser.
    pub filename: String,
    /// The JSON text.
    pub body: String,
}

impl<'r> Responder<'r, 'static> for Attachment {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        in_memory(self.body)
            .raw_header(
                "Content-Disposition",
                format!("attachment; filename={}", self.filename),
            )
            .ok()
    }
}
