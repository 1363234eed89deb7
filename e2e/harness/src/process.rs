//! The plane's processes. Each writes its output to a log file; dropping a [`Process`] kills it.
//! A watchdog shell outlives nothing: it holds the read end of a pipe from the test process and,
//! when that closes because the test process ended without dropping the plane (a static plane, a
//! `SIGKILL`, an abort), kills every process it was told about and removes the plane's directory.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

use crate::error::{Error, Result};

/// A running process of the plane.
#[derive(Debug)]
pub struct Process {
    name: String,
    child: Child,
    log: PathBuf,
    launch: Launch,
}

/// How a process was started, so that it can be started again the same way.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
}

impl Process {
    /// Starts `program` with `args`, its standard output and error going to `log`.
    ///
    /// # Errors
    /// When the log cannot be created or the program cannot be started.
    pub fn spawn(name: &str, program: &Path, args: &[String], log: &Path) -> Result<Self> {
        let launch = Launch {
            program: program.to_owned(),
            args: args.to_vec(),
            env: Vec::new(),
        };
        Self::launch(name, launch, log)
    }

    /// Starts a process as `launch` says; its output is appended to `log`, so that a restarted
    /// process keeps what it wrote before.
    pub(crate) fn launch(name: &str, launch: Launch, log: &Path) -> Result<Self> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(Error::io("create", log))?;
        let err = out.try_clone().map_err(Error::io("open", log))?;
        let child = Command::new(&launch.program)
            .args(&launch.args)
            .envs(launch.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(Error::io("start", &launch.program))?;
        Ok(Self {
            name: name.to_owned(),
            child,
            log: log.to_owned(),
            launch,
        })
    }

    /// How it was started.
    pub(crate) fn launched(&self) -> &Launch {
        &self.launch
    }

    /// The process id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// What the process is called in messages.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where its output goes.
    #[must_use]
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Fails with the end of the log when the process has stopped.
    ///
    /// # Errors
    /// [`Error::Exited`] once it has exited.
    pub fn check_running(&mut self) -> Result<()> {
        match self.child.try_wait() {
            Ok(Some(status)) => Err(self.exited(status)),
            Ok(None) | Err(_) => Ok(()),
        }
    }

    fn exited(&self, status: ExitStatus) -> Error {
        Error::Exited {
            process: self.name.clone(),
            status,
            log: self.log.clone(),
            tail: tail(&self.log, 30),
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last `lines` lines of a log, for error messages.
#[must_use]
pub fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for line in &all[all.len().saturating_sub(lines)..] {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// Kills the plane's processes and removes its directory if the test process goes away first.
#[derive(Debug)]
pub(crate) struct Watchdog {
    shell: Child,
    pids: Option<ChildStdin>,
}

impl Watchdog {
    /// Starts the watchdog for a plane; it removes `dir` too, when given (a plane's own temporary
    /// directory, not one a user chose and may want to read the logs in).
    pub(crate) fn start(dir: Option<&Path>) -> Result<Self> {
        let mut shell = Command::new("bash")
            .args([
                "-c",
                r#"pids=""; while read -r pid; do pids="$pids $pid"; done; kill -9 $pids 2>/dev/null; if [ -n "$1" ]; then rm -rf "$1"; fi"#,
                "watchdog",
            ])
            .arg(dir.unwrap_or(Path::new("")))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(Error::io("start", "bash"))?;
        let pids = shell.stdin.take().ok_or_else(|| Error::Io {
            action: "open the stdin of",
            path: "bash".into(),
            source: std::io::ErrorKind::BrokenPipe.into(),
        })?;
        Ok(Self {
            shell,
            pids: Some(pids),
        })
    }

    /// Tells the watchdog about one more process.
    pub(crate) fn watch(&mut self, process: &Process) -> Result<()> {
        let pids = self.pids.as_mut().ok_or_else(|| Error::Io {
            action: "write to",
            path: "the watchdog".into(),
            source: std::io::ErrorKind::BrokenPipe.into(),
        })?;
        writeln!(pids, "{}", process.id()).map_err(Error::io("write to", "the watchdog"))
    }
}

impl Drop for Watchdog {
    /// An orderly shutdown kills the processes itself, so the watchdog is stopped first: it must not
    /// signal process ids the system may already have given to someone else.
    fn drop(&mut self) {
        let _ = self.shell.kill();
        let _ = self.shell.wait();
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn the_watchdog_stops_what_a_vanished_test_process_left() {
        let dir = std::env::temp_dir().join(format!("capz-watchdog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut watchdog = Watchdog::start(Some(&dir)).unwrap();
        let sleeper = Process::spawn(
            "sleep",
            Path::new("sleep"),
            &["600".to_owned()],
            &dir.join("sleep.log"),
        )
        .unwrap();
        watchdog.watch(&sleeper).unwrap();
        let pid = sleeper.id();
        // What the end of the test process does to the pipe.
        drop(watchdog.pids.take());
        let started = Instant::now();
        while dir.exists() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!dir.exists(), "the watchdog left the plane's directory");
        let mut sleeper = sleeper;
        let status = sleeper.child.wait().unwrap();
        assert!(
            !status.success(),
            "the process ran to its end instead of being killed"
        );
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }
}
