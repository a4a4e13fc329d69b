//! Response bodies: JSON text built by the server, and empty success bodies.

use rocket::http::{ContentType, Status};
use rocket::response::{self, Responder};
use rocket::{Request, Response};
use std::io::Cursor;

/// A JSON body already serialised (often spliced from stored event text, never re-parsed).
pub struct JsonText(pub String);

impl<'r> Responder<'r, 'static> for JsonText {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        Response::build()
            .header(ContentType::JSON)
            .sized_body(self.0.len(), Cursor::new(self.0))
            .ok()
    }
}

/// A success with no payload: the given status and an empty body (`Content-Length: 0`).
pub struct Empty(pub Status);

impl<'r> Responder<'r, 'static> for Empty {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        Response::build()
            .status(self.0)
            .sized_body(0, Cursor::new(Vec::new()))
            .ok()
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
        Response::build()
            .raw_header(
                "Content-Disposition",
                format!("attachment; filename={}", self.filename),
            )
            .sized_body(self.body.len(), Cursor::new(self.body))
            .ok()
    }
}
