//! The native side of `browser_duel`: build the page (cargo for wasm32, then wasm-bindgen),
//! then serve its directory and the in-process matchbox signaling server on one address.
//!
//! The signaling server (matchbox_signaling, on axum) owns the router; a middleware in front of
//! it sends every request that is not a WebSocket upgrade to [`static_file`]: GET and HEAD
//! only, the path percent-decoded and split into plain names (no `..`, `.`, backslash or NUL;
//! anything else is refused), resolved inside the served directory and checked to still be
//! inside it after following links, with the content type of its extension
//! (`application/wasm` for the program).

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use clap::Parser;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The wasm-bindgen version the page's program is built against (the `wasm-bindgen` crate's in
/// `Cargo.lock`); the command-line tool must match it exactly.
const WASM_BINDGEN_VERSION: &str = "0.2.130";
/// The command that installs it (from crates.io, built from source).
const INSTALL: &str = "cargo install wasm-bindgen-cli --version 0.2.130";
/// The page's static files, next to this file.
const WEB_SOURCES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/browser_duel/web");

/// Builds the duel's page and serves it with the matchbox signaling server on one address.
///
/// Prints `ready http://ADDR/` on stdout once it listens; open that URL in two windows (the
/// room is `?room=NAME`, default `duel`) and fight. WebSocket upgrades to ws://ADDR/ROOM reach
/// the signaling server; everything else is a static file of the page's directory.
#[derive(Debug, Parser)]
#[command(
    name = "browser_duel",
    max_term_width = 100,
    after_help = "Examples:
  cargo run --release --features browser --example browser_duel
  cargo run --release --features browser --example browser_duel -- --addr 127.0.0.1:9000
  cargo run --release --features browser --example browser_duel -- --no-build --web-dir target/browser_duel/www

Then open http://127.0.0.1:8080/ in two windows (or ?bot=1 in one of them).
A native peer can join the same room:
  cargo run --release --features matchbox --example p2p_matchbox -- --game duel --room ws://127.0.0.1:8080/duel"
)]
struct Args {
    /// The address to serve the page and the signaling server on.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "HOST:PORT")]
    addr: SocketAddr,
    /// Do not build: serve the directory as it is (see --web-dir).
    #[arg(long, conflicts_with = "build_only")]
    no_build: bool,
    /// Only build the page into --web-dir, print `built DIR` and exit.
    #[arg(long)]
    build_only: bool,
    /// The page's directory: where it is built to, or with --no-build the one served
    /// [default: target/browser_duel/www].
    #[arg(long, value_name = "DIR")]
    web_dir: Option<PathBuf>,
    /// Stop serving after SECS seconds, 1 to 86400 [default: run until stopped].
    #[arg(long = "for", value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    lifetime: Option<u64>,
}

/// Why the command stopped.
enum Failure {
    /// The tools are missing or wrong (exit 2).
    Setup(String),
    /// Something else (exit 1).
    Other(String),
}

/// The command.
pub fn main() -> ExitCode {
    let args = Args::parse();
    let dir = args.web_dir.clone().unwrap_or_else(|| target_dir().join("browser_duel/www"));
    let built = if args.no_build { check_built(&dir) } else { build(&dir) };
    let result = if args.build_only {
        built.map(|()| {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "built {}", dir.display());
            let _ = out.flush();
        })
    } else {
        built.and_then(|()| serve(args.addr, &dir, args.lifetime.map(Duration::from_secs)))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Setup(m)) => {
            eprintln!("browser_duel: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Other(m)) => {
            eprintln!("browser_duel: {m}");
            ExitCode::FAILURE
        }
    }
}

/// Cargo's target directory: `CARGO_TARGET_DIR`, or `target` in the crate.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// With --no-build: the directory must hold a built page.
fn check_built(dir: &Path) -> Result<(), Failure> {
    for f in ["index.html", "app.js", "browser_duel.js", "browser_duel_bg.wasm"] {
        if !dir.join(f).is_file() {
            return Err(Failure::Setup(format!(
                "{} has no {f}: build the page first (run without --no-build, or give the \
                 --web-dir it was built to)",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// `wasm-bindgen --version` must say exactly [`WASM_BINDGEN_VERSION`].
fn check_wasm_bindgen() -> Result<(), Failure> {
    let out = Command::new("wasm-bindgen").arg("--version").stdin(Stdio::null()).output();
    let found = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            return Err(Failure::Setup(format!(
                "wasm-bindgen (the command-line tool) is not installed; install it with:\n  {INSTALL}"
            )));
        }
    };
    if found.split_whitespace().nth(1) != Some(WASM_BINDGEN_VERSION) {
        return Err(Failure::Setup(format!(
            "wasm-bindgen must be version {WASM_BINDGEN_VERSION} (the wasm-bindgen crate's in \
             Cargo.lock), found \"{found}\"; install it with:\n  {INSTALL}"
        )));
    }
    Ok(())
}

/// Runs a command, its output going to this program's stderr; fails with its status.
fn run(cmd: &mut Command, what: &str) -> Result<(), Failure> {
    let status = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| Failure::Other(format!("cannot run {what}: {e}")))?;
    if status.success() { Ok(()) } else { Err(Failure::Other(format!("{what} failed ({status})"))) }
}

/// Builds the page into `dir`: the program for wasm32, its JavaScript bindings, the static
/// files.
fn build(dir: &Path) -> Result<(), Failure> {
    check_wasm_bindgen()?;
    let start = Instant::now();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "browser_duel: building the page (cargo build --release --target wasm32-unknown-unknown)…"
    );
    run(
        Command::new(cargo)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["build", "--release", "--target", "wasm32-unknown-unknown"])
            .args(["--features", "browser", "--example", "browser_duel"]),
        "cargo build for wasm32-unknown-unknown",
    )?;
    let wasm = target_dir().join("wasm32-unknown-unknown/release/examples/browser_duel.wasm");
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::Other(format!("cannot create {}: {e}", dir.display())))?;
    run(
        Command::new("wasm-bindgen")
            .args(["--target", "web", "--no-typescript", "--remove-name-section", "--out-dir"])
            .arg(dir)
            .arg(&wasm),
        "wasm-bindgen",
    )?;
    let sources = std::fs::read_dir(WEB_SOURCES)
        .map_err(|e| Failure::Other(format!("cannot read {WEB_SOURCES}: {e}")))?;
    for entry in sources.flatten() {
        let path = entry.path();
        if path.is_file()
            && let Some(name) = path.file_name()
        {
            std::fs::copy(&path, dir.join(name)).map_err(|e| {
                Failure::Other(format!("cannot copy {} to {}: {e}", path.display(), dir.display()))
            })?;
        }
    }
    let size = std::fs::metadata(dir.join("browser_duel_bg.wasm")).map_or(0, |m| m.len());
    eprintln!(
        "browser_duel: built {} in {:.1} s (program {} KiB)",
        dir.display(),
        start.elapsed().as_secs_f64(),
        size.div_ceil(1024)
    );
    Ok(())
}

/// Serves `dir` and the signaling server on `addr` until stopped (or `lifetime` is up).
fn serve(addr: SocketAddr, dir: &Path, lifetime: Option<Duration>) -> Result<(), Failure> {
    let root = dir
        .canonicalize()
        .map_err(|e| Failure::Setup(format!("cannot serve {}: {e}", dir.display())))?;
    let root = Arc::new(root);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Other(format!("cannot start the runtime: {e}")))?;
    rt.block_on(async move {
        let files = root.clone();
        let mut server = matchbox_signaling::SignalingServer::full_mesh_builder(addr).build_with(
            move |router| {
                router.fallback(not_found).layer(axum::middleware::from_fn(
                    move |req: Request, next: Next| {
                        let files = files.clone();
                        async move { static_or_signaling(&files, req, next).await }
                    },
                ))
            },
        );
        let bound =
            server.bind().map_err(|e| Failure::Setup(format!("cannot listen on {addr}: {e}")))?;
        eprintln!(
            "browser_duel: serving {} and the signaling server (ws://{bound}/ROOM) on {bound}",
            root.display()
        );
        eprintln!("browser_duel: open http://{bound}/ in two windows (?room=NAME, ?bot=1)");
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready http://{bound}/");
        let _ = out.flush();
        drop(out);
        let served = match lifetime {
            Some(d) => match tokio::time::timeout(d, server.serve()).await {
                Ok(r) => r,
                Err(_) => {
                    eprintln!("browser_duel: {} s are up, stopping", d.as_secs());
                    Ok(())
                }
            },
            None => server.serve().await,
        };
        served.map_err(|e| Failure::Other(format!("the server stopped: {e}")))
    })
}

/// What a request that reaches no route gets.
async fn not_found() -> Response {
    plain(StatusCode::NOT_FOUND, "not found")
}

/// WebSocket upgrades go on to the signaling server; everything else is a static file.
async fn static_or_signaling(root: &Arc<PathBuf>, req: Request, next: Next) -> Response {
    let upgrade = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if upgrade {
        return next.run(req).await;
    }
    static_file(root.clone(), req.method().clone(), req.uri().path().to_string()).await
}

/// A small text response.
fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// The content type of a file name.
fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Percent-decodes a URL path; `None` for a malformed escape or text that is not UTF-8.
fn percent_decode(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            let s = core::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(s, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The file a URL path names inside `root`, or why not (a status).
fn resolve(root: &Path, path: &str) -> Result<PathBuf, StatusCode> {
    let decoded = percent_decode(path).ok_or(StatusCode::BAD_REQUEST)?;
    let mut file = root.to_path_buf();
    let mut names = 0;
    for name in decoded.split('/').filter(|s| !s.is_empty()) {
        let plain = name != "."
            && name != ".."
            && !name.contains(['\\', '\0', ':'])
            && !name.starts_with('.');
        if !plain {
            return Err(StatusCode::FORBIDDEN);
        }
        file.push(name);
        names += 1;
    }
    if names == 0 {
        file.push("index.html");
    }
    // After links: still inside the directory, and a file.
    let real = file.canonicalize().map_err(|_| StatusCode::NOT_FOUND)?;
    if !real.starts_with(root) {
        return Err(StatusCode::FORBIDDEN);
    }
    if !real.is_file() {
        return Err(StatusCode::NOT_FOUND);
    }
    Ok(real)
}

/// Serves one static file (GET, HEAD) from `root`.
async fn static_file(root: Arc<PathBuf>, method: Method, path: String) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
        r.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let read = tokio::task::spawn_blocking(move || {
        let file = resolve(&root, &path)?;
        let bytes = std::fs::read(&file).map_err(|_| StatusCode::NOT_FOUND)?;
        Ok::<_, StatusCode>((content_type(&file.to_string_lossy()), bytes))
    })
    .await;
    let (kind, bytes) = match read {
        Ok(Ok(found)) => found,
        Ok(Err(StatusCode::FORBIDDEN)) => return plain(StatusCode::FORBIDDEN, "forbidden"),
        Ok(Err(StatusCode::BAD_REQUEST)) => return plain(StatusCode::BAD_REQUEST, "bad path"),
        Ok(Err(_)) => return plain(StatusCode::NOT_FOUND, "not found"),
        Err(_) => return plain(StatusCode::INTERNAL_SERVER_ERROR, "cannot read the file"),
    };
    let len = bytes.len();
    let mut r =
        Response::new(if method == Method::HEAD { Body::empty() } else { Body::from(bytes) });
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    // A development server: always the freshly built files.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_decoded_strictly() {
        assert_eq!(percent_decode("/a%20b.js").as_deref(), Some("/a b.js"));
        assert_eq!(percent_decode("/%2e%2E/x").as_deref(), Some("/../x"));
        assert_eq!(percent_decode("/bad%2"), None);
        assert_eq!(percent_decode("/bad%zz"), None);
        assert_eq!(percent_decode("/%ff"), None, "not UTF-8");
    }

    #[test]
    fn content_types_name_the_wasm() {
        assert_eq!(content_type("browser_duel_bg.wasm"), "application/wasm");
        assert_eq!(content_type("INDEX.HTML"), "text/html; charset=utf-8");
        assert_eq!(content_type("app.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("style.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("duel.replay"), "application/octet-stream");
    }

    /// Only plain files inside the served directory: `..`, dot files, backslashes, encoded
    /// escapes and links out of it are refused.
    #[test]
    fn only_files_inside_the_directory_are_served() {
        let base = std::env::temp_dir().join(format!("browser_duel_serve_{}", std::process::id()));
        let root = base.join("www");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("index.html"), "<p>hi</p>").unwrap();
        std::fs::write(root.join("sub/a.js"), "1").unwrap();
        std::fs::write(base.join("secret.txt"), "no").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(base.join("secret.txt"), root.join("link.txt")).unwrap();
        let root = root.canonicalize().unwrap();
        assert_eq!(resolve(&root, "/").unwrap(), root.join("index.html"));
        assert_eq!(resolve(&root, "/sub/a.js").unwrap(), root.join("sub/a.js"));
        assert_eq!(resolve(&root, "/sub//a.js").unwrap(), root.join("sub/a.js"));
        for (path, status) in [
            ("/../secret.txt", StatusCode::FORBIDDEN),
            ("/sub/../../secret.txt", StatusCode::FORBIDDEN),
            ("/%2e%2e/secret.txt", StatusCode::FORBIDDEN),
            ("/.hidden", StatusCode::FORBIDDEN),
            ("/sub\\..\\..\\secret.txt", StatusCode::FORBIDDEN),
            ("/a%00b", StatusCode::FORBIDDEN),
            ("/%zz", StatusCode::BAD_REQUEST),
            ("/missing.js", StatusCode::NOT_FOUND),
            ("/sub", StatusCode::NOT_FOUND),
        ] {
            assert_eq!(resolve(&root, path), Err(status), "{path}");
        }
        #[cfg(unix)]
        assert_eq!(resolve(&root, "/link.txt"), Err(StatusCode::FORBIDDEN));
        let _ = std::fs::remove_dir_all(&base);
    }
}
