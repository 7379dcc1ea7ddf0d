//! The network namespaces the browser tests run in (WebRTC peers use every interface): two
//! namespaces joined by a veth pair, each end with an address and a default route through
//! the other end (without a default route Chromium gathers no ICE candidate at all). Nothing
//! else is attached, forwarding is off in a fresh namespace, so no packet can leave the pair.
//! Dropping a [`Pair`] kills every process still in either namespace (only processes the test
//! started can be there), then deletes the veth pair and the namespaces, also on failure.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Namespace and interface names start with this, then the test process's id, the pair's
/// index and `a` or `b` (at most 15 characters, the interface name limit).
pub const PREFIX: &str = "rbabr";

/// Runs `ip` with arguments; the error carries its stderr.
pub fn ip(args: &[&str]) -> Result<String, String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Deletes namespaces left behind by earlier runs that were killed before their guard ran
/// (their test process is gone), after killing what still runs in them.
pub fn delete_stale_namespaces() {
    let Ok(list) = ip(&["netns", "list"]) else { return };
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(rest) = name.strip_prefix(PREFIX).and_then(|r| r.strip_suffix(['a', 'b'])) else {
            continue;
        };
        // The pid is all but the last digit (the pair index).
        let Some(pid) = rest.get(..rest.len().saturating_sub(1)) else { continue };
        if pid.parse::<u32>().is_ok() && !Path::new(&format!("/proc/{pid}")).exists() {
            kill_all_in(name);
            let _ = ip(&["netns", "delete", name]);
        }
    }
}

/// Kills (SIGKILL) every process in namespace `ns`.
fn kill_all_in(ns: &str) {
    let Ok(pids) = ip(&["netns", "pids", ns]) else { return };
    for pid in pids.split_whitespace().filter(|p| p.parse::<u32>().is_ok()) {
        let _ = Command::new("kill").args(["-9", pid]).stderr(Stdio::null()).status();
    }
}

/// Two namespaces `a` and `b` joined by a veth pair.
pub struct Pair {
    /// Namespace A's name (also its veth end's name).
    pub a: String,
    /// Namespace B's name.
    pub b: String,
    /// A's address on the pair.
    pub addr_a: String,
    /// B's address on the pair.
    pub addr_b: String,
    created: Vec<String>,
    children: Vec<Child>,
}

impl Pair {
    /// Creates the pair number `index` (0 to 9): 10.78.`index`.1/24 in A, .2 in B, loopback
    /// up in both, each end's default route through the other.
    pub fn create(index: u8) -> Result<Pair, String> {
        assert!(index < 10, "one digit in the namespace name");
        let pid = std::process::id();
        let mut pair = Pair {
            a: format!("{PREFIX}{pid}{index}a"),
            b: format!("{PREFIX}{pid}{index}b"),
            addr_a: format!("10.78.{index}.1"),
            addr_b: format!("10.78.{index}.2"),
            created: Vec::new(),
            children: Vec::new(),
        };
        for name in [pair.a.clone(), pair.b.clone()] {
            ip(&["netns", "add", &name])?;
            pair.created.push(name);
        }
        let (a, b) = (pair.a.clone(), pair.b.clone());
        // The veth ends are created directly inside the namespaces (never in ours).
        ip(&["link", "add", &a, "netns", &a, "type", "veth", "peer", "name", &b, "netns", &b])?;
        for (name, addr, via) in
            [(&a, &pair.addr_a, &pair.addr_b), (&b, &pair.addr_b, &pair.addr_a)]
        {
            ip(&["-n", name, "addr", "add", &format!("{addr}/24"), "dev", name])?;
            ip(&["-n", name, "link", "set", "lo", "up"])?;
            ip(&["-n", name, "link", "set", name, "up"])?;
            ip(&["-n", name, "route", "add", "default", "via", via, "dev", name])?;
            // webrtc-rs (the native peer) opens an mDNS socket; its multicast stays on the pair.
            ip(&["-n", name, "route", "add", "224.0.0.0/4", "dev", name])?;
        }
        Ok(pair)
    }

    /// A command that runs `program` inside namespace `ns` (one of the pair's).
    pub fn command(&self, ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        assert!(ns == self.a || ns == self.b, "{ns} is not one of this pair's namespaces");
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).arg(program).stdin(Stdio::null());
        cmd
    }

    /// Starts `cmd` (from [`Pair::command`]) with its output collected; the pair kills it
    /// when dropped.
    pub fn spawn(&mut self, mut cmd: Command, name: &str) -> Result<Proc, String> {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        self.children.push(child);
        Ok(Proc::new(name, self.children.len() - 1, stdout, stderr))
    }

    /// The exit status of a process started with [`Pair::spawn`], if it has exited.
    pub fn try_wait(&mut self, p: &Proc) -> Result<Option<ExitStatus>, String> {
        self.children[p.index].try_wait().map_err(|e| e.to_string())
    }

    /// Waits up to `timeout` for a process to exit; kills it and fails if it does not.
    pub fn wait(&mut self, p: &Proc, timeout: Duration) -> Result<ExitStatus, String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait(p)? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = self.children[p.index].kill();
                return Err(format!(
                    "{} did not exit within {} s:\n{}",
                    p.name,
                    timeout.as_secs(),
                    p.output()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for name in &self.created {
            kill_all_in(name);
        }
        if self.created.len() == 2 {
            let _ = ip(&["-n", &self.a, "link", "delete", &self.a]);
        }
        for name in &self.created {
            if let Err(e) = ip(&["netns", "delete", name]) {
                eprintln!("could not delete network namespace {name}: {e}");
            }
        }
    }
}

/// A process started in a namespace: its stdout lines as they come, and everything it wrote.
pub struct Proc {
    /// A name for messages.
    pub name: String,
    index: usize,
    lines: Receiver<String>,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    _threads: [JoinHandle<()>; 2],
}

impl Proc {
    fn new(
        name: &str,
        index: usize,
        stdout: Option<impl Read + Send + 'static>,
        stderr: Option<impl Read + Send + 'static>,
    ) -> Proc {
        let (tx, lines) = mpsc::channel();
        let out = Arc::new(Mutex::new(String::new()));
        let err = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        let t1 = std::thread::spawn(move || {
            let Some(s) = stdout else { return };
            for line in BufReader::new(s).lines().map_while(Result::ok) {
                let mut all = sink.lock().unwrap_or_else(|e| e.into_inner());
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
        });
        let sink = err.clone();
        let t2 = std::thread::spawn(move || {
            let Some(s) = stderr else { return };
            for line in BufReader::new(s).lines().map_while(Result::ok) {
                let mut all = sink.lock().unwrap_or_else(|e| e.into_inner());
                all.push_str(&line);
                all.push('\n');
            }
        });
        Proc { name: name.to_string(), index, lines, stdout: out, stderr: err, _threads: [t1, t2] }
    }

    /// Waits up to `timeout` for a stdout line containing `prefix`; returns what follows it.
    pub fn wait_line(&self, prefix: &str, timeout: Duration) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    // libtest may print "test … ... " in front of a re-executed test's line.
                    if let Some(i) = line.find(prefix) {
                        return Ok(line[i + prefix.len()..].trim().to_string());
                    }
                }
                Err(_) => {
                    // Give the stderr reader a moment to catch the last words.
                    std::thread::sleep(Duration::from_millis(200));
                    return Err(format!(
                        "{} printed no `{prefix}` line within {} s:\n{}",
                        self.name,
                        timeout.as_secs(),
                        self.output()
                    ));
                }
            }
        }
    }

    /// Everything it printed so far (stdout, then stderr).
    pub fn output(&self) -> String {
        let out = self.stdout.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let err = self.stderr.lock().unwrap_or_else(|e| e.into_inner()).clone();
        format!("--- {} stdout\n{out}--- {} stderr\n{err}", self.name, self.name)
    }

    /// Its stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
