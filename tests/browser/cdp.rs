//! A small Chrome DevTools protocol client over `--remote-debugging-pipe`: Chromium reads
//! commands from its file descriptor 3 and writes replies and events to descriptor 4, each
//! message one JSON text ended by a NUL byte. The browser is started as
//! `ip netns exec NS sh -c 'exec chromium … 3<&0 4>&1 </dev/null >&2'`, so descriptors 3 and 4
//! are the pipes of the child's stdin and stdout: no debugging port, no websocket, nothing
//! listening in the namespace, and the browser's end of the protocol dies with the browser.
//!
//! One [`Browser`] drives one page (a target attached in flat mode). Every call waits at most
//! the timeout it is given; the page's console messages and uncaught exceptions are kept for
//! failure messages.

use crate::common::TempDir;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many console lines a browser keeps (the last ones).
const CONSOLE_LINES: usize = 200;

/// The flags every browser gets: headless, no sandbox (the tests run as root), no GPU, no
/// QUIC, nothing fetched at start, plain host ICE candidates (no mDNS names, no multicast).
const FLAGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-features=WebRtcHideLocalIpsWithMdns,Translate,MediaRouter",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--window-size=1280,720",
    "--remote-debugging-pipe",
];

/// The page's viewport (set on every page it opens), so a screenshot's size is known.
pub const WINDOW: (u32, u32) = (1280, 720);

/// A headless Chromium in a network namespace with one page.
pub struct Browser {
    /// A name for messages (`browser A`, …).
    pub name: String,
    child: Child,
    commands: ChildStdin,
    replies: Receiver<Value>,
    console: Arc<Mutex<Vec<String>>>,
    session: Option<String>,
    next_id: u64,
    log: PathBuf,
    /// The profile directory (removed when the browser is dropped).
    _profile: TempDir,
}

/// The Chromium executable: `chromium` (Debian) or `chromium-browser` on the `PATH`.
pub fn chromium() -> Result<(String, String), String> {
    let mut why = Vec::new();
    for name in ["chromium", "chromium-browser"] {
        match Command::new(name).arg("--version").stdin(Stdio::null()).output() {
            Ok(out) if out.status.success() => {
                let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
                return Ok((name.to_string(), version));
            }
            Ok(out) => why.push(format!("`{name} --version` exited with {}", out.status)),
            Err(e) => why.push(format!("no `{name}`: {e}")),
        }
    }
    Err(format!("no usable Chromium ({}); install Debian's `chromium`", why.join("; ")))
}

impl Browser {
    /// Starts `program` (see [`chromium`]) inside network namespace `ns` with a fresh profile;
    /// its own log goes to a file in `logs`.
    pub fn launch(name: &str, program: &str, ns: &str, logs: &Path) -> Result<Browser, String> {
        let profile = TempDir::new(&format!("chromium_{name}"));
        let log = logs.join(format!("chromium-{name}.log"));
        let log_file =
            std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "sh", "-c", r#"exec "$0" "$@" 3<&0 4>&1 </dev/null >&2"#])
            .arg(program)
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn()
            .map_err(|e| format!("cannot start {program} in {ns}: {e}"))?;
        let commands = child.stdin.take().ok_or("no stdin pipe")?;
        let events = child.stdout.take().ok_or("no stdout pipe")?;
        let (tx, replies) = mpsc::channel();
        let console = Arc::new(Mutex::new(Vec::new()));
        let sink = console.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(events);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                let Ok(msg) = serde_json::from_slice::<Value>(&buf) else { continue };
                if msg.get("id").is_some() {
                    if tx.send(msg).is_err() {
                        break;
                    }
                } else if let Some(line) = console_line(&msg) {
                    let mut lines = sink.lock().unwrap_or_else(|e| e.into_inner());
                    if lines.len() == CONSOLE_LINES {
                        lines.remove(0);
                    }
                    lines.push(line);
                }
            }
        });
        let mut browser = Browser {
            name: name.to_string(),
            child,
            commands,
            replies,
            console,
            session: None,
            next_id: 0,
            log,
            _profile: profile,
        };
        // The first reply proves the pipe works (Chromium starts in well under a second here).
        browser
            .call("Browser.getVersion", json!({}), Duration::from_secs(30))
            .map_err(|e| format!("{name}: Chromium did not answer on the pipe: {e}"))?;
        Ok(browser)
    }

    /// Sends one command (to the page's session once [`Browser::open`] attached one, when
    /// `page` is true) and waits up to `timeout` for its reply's `result`.
    fn send(
        &mut self,
        method: &str,
        params: Value,
        page: bool,
        timeout: Duration,
    ) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if page {
            let session = self.session.clone().ok_or("no page is open")?;
            msg["sessionId"] = Value::String(session);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .and_then(|()| self.commands.flush())
            .map_err(|e| format!("{method}: the browser's pipe is closed: {e}"))?;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.replies.recv_timeout(left) {
                Ok(reply) if reply["id"] == id => {
                    if let Some(err) = reply.get("error") {
                        return Err(format!("{method}: {err}"));
                    }
                    return Ok(reply["result"].clone());
                }
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("{method}: no reply within {} s", timeout.as_secs_f64()));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(format!("{method}: the browser closed its pipe (it exited)"));
                }
            }
        }
    }

    /// A browser-level command.
    fn call(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        self.send(method, params, false, timeout)
    }

    /// A command to the open page.
    pub fn page_call(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        self.send(method, params, true, timeout)
    }

    /// Opens a page on `url`: a new target attached in flat mode, the runtime's console
    /// events on, the viewport set, then the navigation. Returns once the document has loaded
    /// (its scripts ran; what they load asynchronously, like the wasm, may still be on its
    /// way).
    pub fn open(&mut self, url: &str) -> Result<(), String> {
        let t = Duration::from_secs(30);
        let target = self.call("Target.createTarget", json!({ "url": "about:blank" }), t)?;
        let target_id = target["targetId"].as_str().ok_or("no targetId")?.to_string();
        let attached = self.call(
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
            t,
        )?;
        self.session = Some(attached["sessionId"].as_str().ok_or("no sessionId")?.to_string());
        self.page_call("Runtime.enable", json!({}), t)?;
        self.page_call("Page.enable", json!({}), t)?;
        // The viewport is exactly [`WINDOW`] (the window's size includes the headless
        // browser's frame), so screenshots have a known size.
        self.page_call(
            "Emulation.setDeviceMetricsOverride",
            json!({
                "width": WINDOW.0,
                "height": WINDOW.1,
                "deviceScaleFactor": 1,
                "mobile": false
            }),
            t,
        )?;
        let nav = self.page_call("Page.navigate", json!({ "url": url }), t)?;
        if let Some(err) = nav.get("errorText").and_then(Value::as_str) {
            return Err(format!("{}: cannot load {url}: {err}", self.name));
        }
        // Until the new document has loaded (its scripts ran), an evaluation may still reach
        // the old one, or a context being torn down: wait for the load.
        let loaded = "document.readyState === 'complete' && location.href !== 'about:blank'";
        self.wait_until(loaded, t).map_err(|e| format!("{url} did not finish loading: {e}"))
    }

    /// Evaluates `condition` until it is true, for at most `t`.
    fn wait_until(&mut self, condition: &str, t: Duration) -> Result<(), String> {
        let deadline = Instant::now() + t;
        loop {
            if let Ok(Value::Bool(true)) = self.eval(condition, Duration::from_secs(5)) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{}: not within {} s\n{}",
                    self.name,
                    t.as_secs(),
                    self.diagnostics()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Reloads the open page, as a person pressing F5 does (the tab's `sessionStorage` stays);
    /// returns once the new document has loaded.
    pub fn reload(&mut self) -> Result<(), String> {
        let t = Duration::from_secs(30);
        // A mark only the old document has: until it is gone, an evaluation may still reach it.
        self.eval("window.__beforeReload = true", t)?;
        self.page_call("Page.reload", json!({ "ignoreCache": false }), t)?;
        let loaded = "document.readyState === 'complete' && window.__beforeReload !== true";
        self.wait_until(loaded, t).map_err(|e| format!("the page did not load again: {e}"))
    }

    /// Loads `url` in the open page's tab, as a person typing it does (the tab's
    /// `sessionStorage` stays for the same origin); returns once the new document has loaded.
    pub fn navigate(&mut self, url: &str) -> Result<(), String> {
        let t = Duration::from_secs(30);
        self.eval("window.__beforeNavigate = true", t)?;
        let nav = self.page_call("Page.navigate", json!({ "url": url }), t)?;
        if let Some(err) = nav.get("errorText").and_then(Value::as_str) {
            return Err(format!("{}: cannot load {url}: {err}", self.name));
        }
        let loaded = "document.readyState === 'complete' && window.__beforeNavigate !== true";
        self.wait_until(loaded, t).map_err(|e| format!("{url} did not finish loading: {e}"))
    }

    /// Evaluates a JavaScript expression in the page (awaiting it if it is a promise) and
    /// returns its value as JSON. An exception thrown by the expression is an error.
    pub fn eval(&mut self, expression: &str, timeout: Duration) -> Result<Value, String> {
        let r = self.page_call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            timeout,
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            let text = ex["exception"]["description"]
                .as_str()
                .or_else(|| ex["text"].as_str())
                .unwrap_or("an exception");
            return Err(format!("{}: `{}` threw: {text}", self.name, short(expression)));
        }
        Ok(r["result"].get("value").cloned().unwrap_or(Value::Null))
    }

    /// A PNG screenshot of the page's viewport.
    pub fn screenshot(&mut self) -> Result<Vec<u8>, String> {
        let r = self.page_call(
            "Page.captureScreenshot",
            json!({ "format": "png" }),
            Duration::from_secs(30),
        )?;
        let data = r["data"].as_str().ok_or("captureScreenshot returned no data")?;
        base64_decode(data)
    }

    /// The page's console messages and uncaught exceptions so far, and the tail of the
    /// browser's own log, for a failure message.
    pub fn diagnostics(&self) -> String {
        let console = self.console.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log
            .lines()
            .filter(|l| !l.contains("dbus") && !l.contains("unexpected operator"))
            .collect();
        let tail = tail[tail.len().saturating_sub(15)..].join("\n");
        format!(
            "--- {} console\n{console}\n--- {} log ({})\n{tail}",
            self.name,
            self.name,
            self.log.display()
        )
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // A polite close first (the profile is written out), then the process is killed; the
        // namespace guard kills whatever helper processes are left in the namespace.
        let _ = self.call("Browser.close", json!({}), Duration::from_secs(3));
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One console line from a DevTools event, if it is a console message or an exception.
fn console_line(msg: &Value) -> Option<String> {
    let p = &msg["params"];
    match msg["method"].as_str()? {
        "Runtime.consoleAPICalled" => {
            let args: Vec<String> = p["args"]
                .as_array()?
                .iter()
                .map(|a| match &a["value"] {
                    Value::String(s) => s.clone(),
                    Value::Null => a["description"].as_str().unwrap_or("").to_string(),
                    v => v.to_string(),
                })
                .collect();
            Some(format!("[{}] {}", p["type"].as_str().unwrap_or("log"), args.join(" ")))
        }
        "Runtime.exceptionThrown" => {
            let d = &p["exceptionDetails"];
            let text = d["exception"]["description"].as_str().or_else(|| d["text"].as_str());
            Some(format!("[exception] {}", text.unwrap_or("?")))
        }
        _ => None,
    }
}

/// The start of a long expression, for messages.
fn short(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Standard base64 (with or without padding) to bytes.
pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (i, c) in text.bytes().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return Err(format!("base64: byte {c:#04x} at offset {i}")),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

/// Bytes to standard base64 with padding.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
