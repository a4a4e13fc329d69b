//! Error paths: what a caller learns when the server says no, is gone, is slow, or when the
//! caller passes something unusable.

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use aw_client_rust::{AwClient, ClientError};
use serde_json::json;

use crate::common::{event, free_port, Server};

#[tokio::test]
async fn unknown_bucket_is_a_404_with_the_server_message() {
    let server = Server::start();
    let client = server.client();
    let e = event(0.0, 0.0, json!({}));
    let errors = vec![
        client.get_bucket("ghost").await.map(|_| ()),
        client
            .get_events("ghost", None, None, None)
            .await
            .map(|_| ()),
        client.get_event("ghost", 1).await.map(|_| ()),
        client.get_event_count("ghost").await.map(|_| ()),
        client.insert_event("ghost", &e).await,
        client.heartbeat("ghost", &e, 1.0).await,
        client.delete_event("ghost", 1).await,
        client.delete_bucket("ghost").await,
        client.export_bucket("ghost").await.map(|_| ()),
    ];
    for result in errors {
        let err = result.unwrap_err();
        assert_eq!(err.status(), Some(404), "{err}");
        assert!(err.is_not_found());
        let message = err.message().unwrap();
        assert!(
            message.contains("'ghost'") && message.contains("does not exist"),
            "{message}"
        );
        let url = err.url().unwrap();
        assert!(url.starts_with(&format!(
            "http://127.0.0.1:{}/api/0/buckets/ghost",
            server.port
        )));
        let text = err.to_string();
        assert!(
            text.contains("404") && text.contains(message) && text.contains(url),
            "{text}"
        );
        assert!(matches!(err, ClientError::Http { .. }));
    }
    // The blocking client reports the same.
    let err = server.blocking().get_bucket("ghost").unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(
        err.message(),
        Some("The requested bucket 'ghost' does not exist")
    );
}

#[tokio::test]
async fn server_down_is_a_connect_error_naming_the_url() {
    let port = free_port();
    let client = AwClient::new("127.0.0.1", port, "nobody-home").unwrap();
    let err = client.get_buckets().await.unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    assert_eq!(err.status(), None);
    let url = format!("http://127.0.0.1:{port}/api/0/buckets/");
    assert_eq!(err.url(), Some(url.as_str()));
    let text = err.to_string();
    assert!(text.contains(&url), "{text}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[tokio::test]
async fn server_stopping_mid_session_is_a_connect_error() {
    let mut server = Server::start();
    let client = server.client();
    client.create_bucket_simple("b", "t").await.unwrap();
    server.kill();
    let err = client
        .heartbeat("b", &event(0.0, 0.0, json!({})), 1.0)
        .await
        .unwrap_err();
    // A pooled connection may be cut rather than refused; either way it is not an HTTP status.
    assert!(
        matches!(
            err,
            ClientError::Connect { .. } | ClientError::Request { .. }
        ),
        "{err:?}"
    );
    let again = client.get_info().await.unwrap_err();
    assert!(again.is_connect(), "{again:?}");
}

#[tokio::test]
async fn a_silent_server_times_out() {
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            held.push(stream);
        }
    });
    let client = AwClient::builder("127.0.0.1", port, "impatient")
        .timeout(Duration::from_millis(300))
        .connect_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client.get_info().await.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    // It gave up (only a hang would reach this bound; the time is the machine's).
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );

    let blocking = AwClient::builder("127.0.0.1", port, "impatient")
        .timeout(Duration::from_millis(300))
        .build_blocking()
        .unwrap();
    let err = tokio::task::spawn_blocking(move || blocking.get_info().unwrap_err())
        .await
        .unwrap();
    assert!(err.is_timeout(), "{err:?}");
}

#[tokio::test]
async fn invalid_arguments_are_rejected_before_sending() {
    // Port with nothing listening: a request would be a connect error, not InvalidArgument.
    let client = AwClient::new("127.0.0.1", free_port(), "careful").unwrap();
    let e = event(0.0, 0.0, json!({}));
    let results = vec![
        client.get_bucket("").await.map(|_| ()),
        client.get_bucket(".").await.map(|_| ()),
        client.delete_bucket("..").await,
        client.heartbeat("b", &e, f64::NAN).await,
        client.heartbeat("b", &e, f64::INFINITY).await,
        client.get_setting("").await.map(|_| ()),
    ];
    for result in results {
        let err = result.unwrap_err();
        assert!(
            matches!(err, ClientError::InvalidArgument { .. }),
            "{err:?}"
        );
    }
    for host in ["", "a/b", "ftp://x", "bad host"] {
        let err = AwClient::new(host, 5600, "x").unwrap_err();
        assert!(
            matches!(err, ClientError::InvalidArgument { .. }),
            "{host}: {err:?}"
        );
    }
    let err = AwClient::new_with_api_key("127.0.0.1", 5600, "x", "bad\nkey").unwrap_err();
    assert!(
        matches!(err, ClientError::InvalidArgument { .. }),
        "{err:?}"
    );
    assert!(!err.to_string().contains("bad\nkey"), "key leaked: {err}");
}

#[tokio::test]
async fn api_key_is_sent_as_bearer_token() {
    let server = Server::start_with_config("[auth]\napi_key = \"s3cret-key\"\n");
    let port = server.port;

    let anonymous = AwClient::new("127.0.0.1", port, "anon").unwrap();
    anonymous.get_info().await.unwrap(); // info is exempt
    let err = anonymous.get_buckets().await.unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");
    assert!(err.message().unwrap().contains("API key"), "{err}");

    let wrong = AwClient::new_with_api_key("127.0.0.1", port, "w", "nope").unwrap();
    assert_eq!(wrong.get_buckets().await.unwrap_err().status(), Some(401));

    for client in [
        AwClient::new_with_api_key("127.0.0.1", port, "k", "s3cret-key").unwrap(),
        AwClient::new_with_api_key("127.0.0.1", port, "k", Some("s3cret-key".to_string())).unwrap(),
        AwClient::builder("127.0.0.1", port, "k")
            .api_key("s3cret-key")
            .build()
            .unwrap(),
    ] {
        client.create_bucket_simple("keyed", "t").await.unwrap();
        assert!(client.get_buckets().await.unwrap().contains_key("keyed"));
        client.set_setting("k", &1).await.unwrap();
    }
    let blocking =
        aw_client_rust::blocking::AwClient::new_with_api_key("127.0.0.1", port, "b", "s3cret-key")
            .unwrap();
    let n = tokio::task::spawn_blocking(move || blocking.get_buckets().unwrap().len())
        .await
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn testing_port_constants() {
    assert_eq!(AwClient::testing_port(), 5666);
    assert_eq!(AwClient::default_port(), 5600);
    assert_eq!(aw_client_rust::blocking::AwClient::testing_port(), 5666);
    let client = AwClient::new("localhost", AwClient::testing_port(), "t").unwrap();
    assert_eq!(client.baseurl.as_str(), "http://localhost:5666/");
}
