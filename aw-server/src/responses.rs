//! Response bodies: in memory (JSON text built by the server, empty success bodies, export
//! downloads, and through [`in_memory`] error bodies and embedded dashboard files), or
//! streamed as written (the CSV export).

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
pub(crate) fn in_memory<T>(body: T) -> response::Builder<'static>
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
pub(crate) struct JsonText(pub String);

impl<'r> Responder<'r, 'static> for JsonText {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        in_memory(self.0).header(ContentType::JSON).ok()
    }
}

/// A success with no payload: the given status and an empty body (`Content-Length: 0`).
pub(crate) struct Empty(pub Status);

impl<'r> Responder<'r, 'static> for Empty {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        in_memory(Vec::new()).status(self.0).ok()
    }
}

/// An export document offered as a download (`Content-Disposition: attachment`), with no
/// content type, as the reference sends it.
pub(crate) struct Attachment {
    /// The file name offered to the browser.
    pub filename: String,
    /// The JSON text.
    pub body: String,
}

impl<'r> Responder<'r, 'static> for Attachment {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        in_memory(self.body)
            .raw_header("Content-Disposition", content_disposition(&self.filename))
            .ok()
    }
}

/// The `Content-Disposition` of a download named `filename`, valid for any name.
///
/// A name of RFC 9110 token characters is sent as the reference sends it,
/// `attachment; filename=<name>`. Any other name (a bucket id with a space, a quote,
/// non-ASCII text or a control character, which hyper would refuse in a header) gets an
/// ASCII `filename="…"` with those characters replaced by `_`, and the exact name as
/// RFC 6266 / RFC 8187 `filename*=UTF-8''<percent-encoded>`, which browsers prefer.
pub(crate) fn content_disposition(filename: &str) -> String {
    let is_token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if !filename.is_empty() && filename.bytes().all(is_token) {
        return format!("attachment; filename={filename}");
    }
    let fallback: String = filename
        .chars()
        .map(|c| match c {
            ' ' | '!' | '#'..='[' | ']'..='~' => c,
            _ => '_',
        })
        .collect();
    let mut encoded = String::with_capacity(filename.len() * 3);
    for b in filename.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

/// A CSV download written while it is sent: chunks arrive through a bounded channel from
/// the thread that writes them (`csv_export.rs`), so a slow client makes the writer wait
/// instead of the server holding the whole file.
pub(crate) struct CsvDownload {
    /// The file name offered to the browser.
    pub filename: String,
    /// The chunks, in order; the body ends when the writer drops its end, and fails (the
    /// connection is cut) at an error.
    pub chunks: rocket::tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
}

impl<'r> Responder<'r, 'static> for CsvDownload {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        Response::build()
            .header(ContentType::new("text", "csv").with_params(("charset", "utf-8")))
            .raw_header("Content-Disposition", content_disposition(&self.filename))
            .streamed_body(Chunks {
                chunks: self.chunks,
                current: Cursor::new(Vec::new()),
            })
            .ok()
    }
}

/// The chunks of a channel read as one byte stream.
struct Chunks {
    chunks: rocket::tokio::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    current: Cursor<Vec<u8>>,
}

impl rocket::tokio::io::AsyncRead for Chunks {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut rocket::tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        loop {
            let at = self.current.position() as usize;
            let chunk = self.current.get_ref();
            if at < chunk.len() {
                let n = (chunk.len() - at).min(buf.remaining());
                buf.put_slice(&chunk[at..at + n]);
                self.current.set_position((at + n) as u64);
                return Poll::Ready(Ok(()));
            }
            match self.chunks.poll_recv(cx) {
                Poll::Ready(Some(Ok(next))) => self.current = Cursor::new(next),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                // The writer is done (or gone): the body ends.
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::content_disposition;

    #[test]
    fn plain_names_as_the_reference_sends_them_others_in_rfc_6266_form() {
        assert_eq!(
            content_disposition("aw-bucket-export_aw-watcher-window_my-host.local.json"),
            "attachment; filename=aw-bucket-export_aw-watcher-window_my-host.local.json"
        );
        assert_eq!(
            content_disposition("aw-bucket-export_a b\"c\\d;é\u{1}.json"),
            "attachment; filename=\"aw-bucket-export_a b_c_d;__.json\"; \
             filename*=UTF-8''aw-bucket-export_a%20b%22c%5Cd%3B%C3%A9%01.json"
        );
        for name in ["x\r\ny", "\u{7f}", "", "日本"] {
            let value = content_disposition(name);
            assert!(value.bytes().all(|b| (0x20..0x7f).contains(&b)), "{value}");
        }
    }
}
