//! `GET /api/0/openapi.json`: the API contract as an OpenAPI 3 document.
//!
//! The document (`src/openapi.json`) describes every route with its parameters, bodies,
//! status codes and response schemas. A unit test below keeps its list of operations equal
//! to the routes the server mounts, and `tests/schemathesis/run.sh` fuzzes the real binary
//! against it in the test command.

use crate::responses::JsonText;

/// The document, embedded so the binary always serves the contract it was built with.
pub(crate) const DOCUMENT: &str = include_str!("../openapi.json");

/// The OpenAPI document (under `/api/`, so it needs the API key when one is set).
#[rocket::get("/api/0/openapi.json")]
pub(crate) fn openapi() -> JsonText {
    JsonText(DOCUMENT.to_owned())
}

#[cfg(test)]
mod tests {
    use super::DOCUMENT;
    use std::collections::BTreeSet;

    /// `(METHOD, /path/{param})` of every mounted API route.
    fn mounted() -> BTreeSet<(String, String)> {
        crate::endpoints::api_routes()
            .iter()
            .map(|route| {
                let path = route.uri.path().to_string();
                let path = path.replace('<', "{").replace('>', "}");
                (route.method.as_str().to_string(), path)
            })
            .collect()
    }

    /// `(METHOD, path)` of every operation in the document.
    fn documented() -> BTreeSet<(String, String)> {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
        let mut out = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                if ["get", "post", "delete", "put", "patch", "head", "options"]
                    .contains(&method.as_str())
                {
                    out.insert((method.to_ascii_uppercase(), path.clone()));
                }
            }
        }
        out
    }

    #[test]
    fn the_document_lists_exactly_the_mounted_routes() {
        assert_eq!(documented(), mounted());
    }

    #[test]
    fn the_document_is_openapi_3_with_an_operation_id_everywhere() {
        let doc: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if op.is_object() && op.get("responses").is_some() {
                    assert!(op["operationId"].is_string(), "{method} {path}");
                }
            }
        }
    }
}
