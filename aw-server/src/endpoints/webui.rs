//! Static files: the web UI and custom static pages.
//!
//! With `--webpath`, the web UI build in that directory is served at `/`, `/css/…`,
//! `/fonts/…`, `/js/…`, `/static/…` and the top-level files the aw-webui build has. Without
//! it, `/` answers a built-in page telling the user where the API is and how to add a UI.
//! `/pages/<name>/…` serves the directories of `custom_static`.

use rocket::fs::NamedFile;
use rocket::http::uri::fmt::Path as UriPath;
use rocket::http::uri::Segments;
use rocket::http::ContentType;
use rocket::State;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where static files come from, fixed at startup.
pub struct StaticFiles {
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

/// What `/` answers: the web UI's `index.html`, or the built-in page.
pub enum IndexPage {
    /// A file of the web UI build.
    File(NamedFile),
    /// The built-in page.
    BuiltIn(ContentType, &'static str),
}

impl<'r> rocket::response::Responder<'r, 'static> for IndexPage {
    fn respond_to(self, req: &'r rocket::Request<'_>) -> rocket::response::Result<'static> {
        match self {
            IndexPage::File(f) => f.respond_to(req),
            IndexPage::BuiltIn(ct, body) => (ct, body).respond_to(req),
        }
    }
}

const BUILT_IN_INDEX: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ActivityWatch server</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:3rem auto;padding:0 1rem;line-height:1.5}code{background:#eee;padding:.1em .3em;border-radius:3px}</style>
</head><body>
<h1>ActivityWatch server is running</h1>
<p>The API is at <a href="/api/0/info"><code>/api/0/info</code></a> and
<a href="/api/0/buckets/"><code>/api/0/buckets/</code></a>; watchers and <code>aw-client</code>
scripts can connect now.</p>
<p>No web UI is installed. To use the ActivityWatch dashboard, start the server with
<code>--webpath /path/to/aw-webui/dist</code>.</p>
</body></html>
"#;

/// The web UI's start page.
#[rocket::get("/")]
pub async fn index(files: &State<StaticFiles>) -> IndexPage {
    match web_file(files, Path::new("index.html")).await {
        Some(f) => IndexPage::File(f),
        None => IndexPage::BuiltIn(ContentType::HTML, BUILT_IN_INDEX),
    }
}

/// Files under `/css/` of the web UI build.
#[rocket::get("/css/<path..>")]
pub async fn css(path: Segments<'_, UriPath>, files: &State<StaticFiles>) -> Option<NamedFile> {
    web_file(files, &Path::new("css").join(safe_path(path)?)).await
}

/// Files under `/fonts/` of the web UI build.
#[rocket::get("/fonts/<path..>")]
pub async fn fonts(path: Segments<'_, UriPath>, files: &State<StaticFiles>) -> Option<NamedFile> {
    web_file(files, &Path::new("fonts").join(safe_path(path)?)).await
}

/// Files under `/js/` of the web UI build.
#[rocket::get("/js/<path..>")]
pub async fn js(path: Segments<'_, UriPath>, files: &State<StaticFiles>) -> Option<NamedFile> {
    web_file(files, &Path::new("js").join(safe_path(path)?)).await
}

/// Files under `/static/` of the web UI build.
#[rocket::get("/static/<path..>")]
pub async fn static_dir(
    path: Segments<'_, UriPath>,
    files: &State<StaticFiles>,
) -> Option<NamedFile> {
    web_file(files, &Path::new("static").join(safe_path(path)?)).await
}

/// The top-level files of an aw-webui build.
#[rocket::get("/<file>", rank = 20)]
pub async fn top_level(file: &str, files: &State<StaticFiles>) -> Option<NamedFile> {
    if !["favicon.ico", "dark.css", "logo.png", "manifest.json"].contains(&file) {
        return None;
    }
    web_file(files, Path::new(file)).await
}

/// `/pages/<name>/…` from the custom static directory `name` (`index.html` for the
/// directory itself). Dotfiles and `..` are 404.
#[rocket::get("/pages/<name>/<path..>")]
pub async fn custom_page(
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
pub fn routes() -> Vec<rocket::Route> {
    rocket::routes![index, css, fonts, js, static_dir, top_level, custom_page]
}
