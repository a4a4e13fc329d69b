//! Static files: the web UI and custom static pages.
//!
//! With `--webpath`, the web UI build in that directory is served at `/`, `/css/…`,
//! `/fonts/…`, `/js/…`, `/static/…` and the top-level files the aw-webui build has. The
//! built-in dashboard compiled into the binary (`dashboard.rs`) answers `/` and `/static/…`
//! without `--webpath`, and, like the reference's embedded copy, for any of those files the
//! given directory lacks.
//! `/pages/<name>/…` serves the directories of `custom_static`.

use rocket::fs::NamedFile;
use rocket::http::uri::fmt::Path as UriPath;
use rocket::http::uri::Segments;
use rocket::http::ContentType;
use rocket::State;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::dashboard;

/// Where static files come from, fixed at startup.
pub(crate) struct StaticFiles {
    /// The web UI build directory, if one was given.
    pub webpath: Option<PathBuf>,
    /// Custom static directories by name.
    pub custom: BTreeMap<String, PathBuf>,
}

/// The relative path of URL segments; `None` for `..` or a dotfile, which are never served.
fn safe_path(segments: Segments<'_, UriPath>) -> Option<PathBuf> {
    segments.to_path_buf(false).ok()
}

async fn web_file(files: &StaticFiles, path: &Path) -> Option<NamedFile> {
    let root = files.webpath.as_ref()?;
    NamedFile::open(root.join(path)).await.ok()
}

/// A static file: from the web UI directory, or embedded in the binary.
pub(crate) enum StaticFile {
    /// A file of the `--webpath` directory.
    File(NamedFile),
    /// A file of the built-in dashboard.
    Embedded(ContentType, &'static [u8]),
}

impl<'r> rocket::response::Responder<'r, 'static> for StaticFile {
    fn respond_to(self, req: &'r rocket::Request<'_>) -> rocket::response::Result<'static> {
        match self {
            StaticFile::File(f) => f.respond_to(req),
            StaticFile::Embedded(ct, body) => crate::responses::in_memory(body).header(ct).ok(),
        }
    }
}

/// `path` from `--webpath` when one is given, else from the built-in dashboard.
/// `web_path` from `--webpath` when that file exists there (as the reference looks there
/// first), else `embedded_path` from the built-in dashboard.
async fn ui_file(files: &StaticFiles, web_path: &Path, embedded_path: &Path) -> Option<StaticFile> {
    if let Some(f) = web_file(files, web_path).await {
        return Some(StaticFile::File(f));
    }
    let (ct, bytes) = dashboard::embedded(embedded_path.to_str()?)?;
    Some(StaticFile::Embedded(ct, bytes))
}

/// The start page: the web UI's `index.html`, or the built-in dashboard's.
#[rocket::get("/")]
pub(crate) async fn index(files: &State<StaticFiles>) -> Option<StaticFile> {
    ui_file(files, Path::new("index.html"), Path::new("index.html")).await
}

/// Files under `/css/` of the web UI build.
#[rocket::get("/css/<path..>")]
pub(crate) async fn css(
    path: Segments<'_, UriPath>,
    files: &State<StaticFiles>,
) -> Option<NamedFile> {
    web_file(files, &Path::new("css").join(safe_path(path)?)).await
}

/// Files under `/fonts/` of the web UI build.
#[rocket::get("/fonts/<path..>")]
pub(crate) async fn fonts(
    path: Segments<'_, UriPath>,
    files: &State<StaticFiles>,
) -> Option<NamedFile> {
    web_file(files, &Path::new("fonts").join(safe_path(path)?)).await
}

/// Files under `/js/` of the web UI build.
#[rocket::get("/js/<path..>")]
pub(crate) async fn js(
    path: Segments<'_, UriPath>,
    files: &State<StaticFiles>,
) -> Option<NamedFile> {
    web_file(files, &Path::new("js").join(safe_path(path)?)).await
}

/// Files under `/static/`: of the web UI build, or of the built-in dashboard (whose files
/// all live there).
#[rocket::get("/static/<path..>")]
pub(crate) async fn static_dir(
    path: Segments<'_, UriPath>,
    files: &State<StaticFiles>,
) -> Option<StaticFile> {
    let path = safe_path(path)?;
    ui_file(files, &Path::new("static").join(&path), &path).await
}

/// The top-level files of an aw-webui build.
#[rocket::get("/<file>", rank = 20)]
pub(crate) async fn top_level(file: &str, files: &State<StaticFiles>) -> Option<NamedFile> {
    if !["favicon.ico", "dark.css", "logo.png", "manifest.json"].contains(&file) {
        return None;
    }
    web_file(files, Path::new(file)).await
}

/// `/pages/<name>/…` from the custom static directory `name` (`index.html` for the
/// directory itself). Dotfiles and `..` are 404.
#[rocket::get("/pages/<name>/<path..>")]
pub(crate) async fn custom_page(
    name: &str,
    path: Segments<'_, UriPath>,
    files: &State<StaticFiles>,
) -> Option<NamedFile> {
    let root = files.custom.get(name)?;
    let path = safe_path(path)?;
    let target = if path.as_os_str().is_empty() {
        root.join("index.html")
    } else {
        root.join(path)
    };
    let target = if target.is_dir() {
        target.join("index.html")
    } else {
        target
    };
    NamedFile::open(target).await.ok()
}

/// The static-file routes.
pub(crate) fn routes() -> Vec<rocket::Route> {
    rocket::routes![index, css, fonts, js, static_dir, top_level, custom_page]
}
