//! A minimal HTTP/1.1 client over one keep-alive TCP connection, for exact control of
//! requests in tests (methods, headers, raw bodies, malformed paths).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One response.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body bytes as text.
    pub body: String,
}

impl Response {
    /// The first header of that (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (panics with the body when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

/// The body that inserts the event numbered `n` (see [`Client::insert_numbered`]).
pub fn numbered_event(n: usize) -> String {
    format!(r#"[{{"timestamp":"2026-01-01T00:00:00Z","duration":{n},"data":{{"n":{n}}}}}]"#)
}

/// A keep-alive connection to a server on 127.0.0.1; reconnects when the server closed it.
pub struct Client {
    port: u16,
    conn: Option<BufReader<TcpStream>>,
}

impl Client {
    /// A client for `127.0.0.1:port`.
    pub fn new(port: u16) -> Client {
        Client { port, conn: None }
    }

    /// GET.
    pub fn get(&mut self, path: &str) -> Response {
        self.request("GET", path, &[], None)
    }

    /// DELETE.
    pub fn delete(&mut self, path: &str) -> Response {
        self.request("DELETE", path, &[], None)
    }

    /// POST with a JSON body and `Content-Type: application/json`.
    pub fn post_json(&mut self, path: &str, body: &str) -> Response {
        self.request(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            Some(body.as_bytes()),
        )
    }

    /// Creates bucket `id` (client `c`, type `t`, host `h`): the set-up of many tests, which
    /// fails the test on any answer but 200.
    pub fn create_test_bucket(&mut self, id: &str) {
        let r = self.post_json(
            &format!("/api/0/buckets/{id}"),
            r#"{"client":"c","type":"t","hostname":"h"}"#,
        );
        assert_eq!(r.status, 200, "creating bucket {id}: {}", r.body);
    }

    /// Inserts into `bucket` the event numbered `n` (`data.n`, its duration `n` s, at the
    /// start of 2026): what a durability test writes and then counts with
    /// [`Client::stored_numbers`] (fails the test on any answer but 200).
    pub fn insert_numbered(&mut self, bucket: &str, n: usize) {
        let r = self.post_json(
            &format!("/api/0/buckets/{bucket}/events"),
            &numbered_event(n),
        );
        assert_eq!(r.status, 200, "inserting {n} into {bucket}: {}", r.body);
    }

    /// `POST /api/0/backups`: the file name of the backup the server took (which commits
    /// first); fails the test on any answer but 200.
    pub fn backup_now(&mut self) -> String {
        let r = self.request("POST", "/api/0/backups", &[], None);
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["file"]
            .as_str()
            .unwrap_or_else(|| panic!("no file in {}", r.body))
            .to_string()
    }

    /// The numbers `data.n` of every event of `bucket`, sorted: what a durability test
    /// compares with the writes it had acknowledged (fails the test on a non-200).
    pub fn stored_numbers(&mut self, bucket: &str) -> Vec<usize> {
        let r = self.get(&format!("/api/0/buckets/{bucket}/events?limit=-1"));
        assert_eq!(r.status, 200, "{}", r.body);
        let mut numbers: Vec<usize> = r
            .json()
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["data"]["n"].as_u64())
            .map(|n| n as usize)
            .collect();
        numbers.sort_unstable();
        numbers
    }

    /// Any request. `Host: 127.0.0.1:<port>` is added unless a `Host` header is given;
    /// a header with an empty name is skipped, which lets a test send no Host at all.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Response {
        let bytes = self.encode(method, path, headers, body);
        // A kept-alive connection may have been closed by the server: retry once on a new one.
        for attempt in 0..2 {
            if let Some(resp) = self.try_send(&bytes, method == "HEAD") {
                return resp;
            }
            self.conn = None;
            if attempt == 1 {
                break;
            }
        }
        panic!("no response from the server for {method} {path}");
    }

    /// Sends one request once: `None` when no response came (the connection failed or was
    /// closed). Unlike [`Client::request`] it never sends a request twice, so a load test
    /// can tell an unanswered write from one that was stored.
    pub fn send_once(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Option<Response> {
        let bytes = self.encode(method, path, headers, body);
        let resp = self.try_send(&bytes, method == "HEAD");
        if resp.is_none() {
            self.conn = None;
        }
        resp
    }

    fn encode(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("Host: 127.0.0.1:{}\r\n", self.port));
        }
        for &(k, v) in headers {
            if !k.is_empty() && !v.is_empty() {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        head.push_str(&format!(
            "Content-Length: {}\r\n\r\n",
            body.map_or(0, |b| b.len())
        ));
        let mut bytes = head.into_bytes();
        if let Some(b) = body {
            bytes.extend_from_slice(b);
        }
        bytes
    }

    fn try_send(&mut self, bytes: &[u8], head: bool) -> Option<Response> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
            stream
                .set_read_timeout(Some(Duration::from_secs(120)))
                .ok()?;
            stream.set_nodelay(true).ok()?;
            self.conn = Some(BufReader::new(stream));
        }
        let conn = self.conn.as_mut()?;
        conn.get_mut().write_all(bytes).ok()?;
        let resp = read_response(conn, head)?;
        if resp
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
        {
            self.conn = None;
        }
        Some(resp)
    }
}

fn read_response(conn: &mut BufReader<TcpStream>, head: bool) -> Option<Response> {
    let mut line = String::new();
    if conn.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let status: u16 = line.split_whitespace().nth(1)?.parse().ok()?;
    let mut headers = Vec::new();
    loop {
        let mut l = String::new();
        conn.read_line(&mut l).ok()?;
        let l = l.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = get("content-length") {
        let len: usize = len.parse().ok()?;
        // 304 and HEAD-like answers announce a length but carry no body.
        if !head && status != 304 && status != 204 {
            body.resize(len, 0);
            conn.read_exact(&mut body).ok()?;
        }
    } else if get("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            let mut size = String::new();
            conn.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; n + 2];
            conn.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    Some(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}
