//! The plane's processes. Each writes its output to a log file; dropping a [`Process`] kills it.
//! A process that exits is started again the way it was started first, as the kubelet restarts a
//! container: after 10 s, doubling up to 5 minutes for one that keeps exiting, and from 10 s again
//! once it has run for 10 minutes. Its restarts are counted.
//! A watchdog shell outlives nothing: it holds the read end of a pipe from the test process and,
//! when that closes because the test process ended without dropping the plane (a static plane, a
//! `SIGKILL`, an abort), kills every process it was told about and removes the plane's directory.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The first wait before a process that exited is started again.
const FIRST_RESTART: Duration = Duration::from_secs(10);
/// The longest wait between restarts.
const LONGEST_RESTART: Duration = Duration::from_mins(5);
/// A process that ran this long before it exited is restarted after the first wait again.
const STEADY: Duration = Duration::from_mins(10);
/// How often the supervisor looks at its process.
const LOOK: Duration = Duration::from_millis(200);

/// A running process of the plane.
#[derive(Debug)]
pub struct Process {
    name: String,
    log: PathBuf,
    launch: Launch,
    supervised: Arc<Supervised>,
    supervisor: Option<JoinHandle<()>>,
}

/// What a process and its supervisor thread share.
#[derive(Debug)]
struct Supervised {
    child: Mutex<Child>,
    /// The status it last exited with.
    exited: Mutex<Option<ExitStatus>>,
    restarts: AtomicU32,
    stop: AtomicBool,
}

/// How a process was started, so that it can be started again the same way.
#[derive(Debug, Clone)]
pub(crate) struct Launch {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    /// The container `program` (runc) runs, which outlives a killed runc unless deleted.
    pub(crate) container: Option<Container>,
}

/// A container runc runs in the foreground, by its state directory and id.
#[derive(Debug, Clone)]
pub(crate) struct Container {
    pub(crate) runc_root: PathBuf,
    pub(crate) id: String,
}

impl Container {
    /// Kills and removes the container, if it is there.
    pub(crate) fn delete(&self) {
        let _ = Command::new("runc")
            .arg(format!("--root={}", self.runc_root.display()))
            .args(["delete", "--force", &self.id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Sends `signal` (such as `TERM`) to the container's first process.
    fn signal(&self, signal: &str) {
        let _ = Command::new("runc")
            .arg(format!("--root={}", self.runc_root.display()))
            .args(["kill", &self.id, signal])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// The host's id of the container's first process, once it runs.
    fn pid(&self) -> Option<u32> {
        let output = Command::new("runc")
            .arg(format!("--root={}", self.runc_root.display()))
            .args(["state", &self.id])
            .output()
            .ok()?;
        let state: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
        state["pid"]
            .as_u64()
            .and_then(|pid| u32::try_from(pid).ok())
            .filter(|pid| *pid != 0)
    }
}

impl Launch {
    /// Starts it, appending its output to `log`, so that a restarted process keeps what it
    /// wrote before.
    fn start(&self, log: &Path) -> Result<Child> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(Error::io("create", log))?;
        let err = out.try_clone().map_err(Error::io("open", log))?;
        Command::new(&self.program)
            .args(&self.args)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(Error::io("start", &self.program))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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
            container: None,
        };
        Self::launch(name, launch, log, None)
    }

    /// Starts a process as `launch` says, and supervises it: restarted when it exits, each new
    /// process id told to `watchdog`.
    pub(crate) fn launch(name: &str, launch: Launch, log: &Path, watchdog: Option<Watchdog>) -> Result<Self> {
        let child = launch.start(log)?;
        if let Some(watchdog) = &watchdog {
            watchdog.watch(child.id())?;
        }
        let supervised = Arc::new(Supervised {
            child: Mutex::new(child),
            exited: Mutex::new(None),
            restarts: AtomicU32::new(0),
            stop: AtomicBool::new(false),
        });
        let supervisor = std::thread::Builder::new()
            .name(format!("supervise {name}"))
            .spawn({
                let (supervised, launch, log, name) = (
                    supervised.clone(),
                    launch.clone(),
                    log.to_owned(),
                    name.to_owned(),
                );
                move || supervise(&name, &supervised, &launch, &log, watchdog.as_ref())
            })
            .map_err(Error::io("start a supervisor thread for", name))?;
        Ok(Self {
            name: name.to_owned(),
            log: log.to_owned(),
            launch,
            supervised,
            supervisor: Some(supervisor),
        })
    }

    /// How it was started.
    pub(crate) fn launched(&self) -> &Launch {
        &self.launch
    }

    /// The process id of its current run.
    #[must_use]
    pub fn id(&self) -> u32 {
        lock(&self.supervised.child).id()
    }

    /// Stops it for good: SIGTERM to the program (in its container, through runc), then, if it
    /// has not exited after `grace`, what dropping it does.
    pub(crate) fn terminate(mut self, grace: Duration) {
        self.supervised.stop.store(true, Ordering::SeqCst);
        if let Some(supervisor) = self.supervisor.take() {
            let _ = supervisor.join();
        }
        match &self.launch.container {
            Some(container) => container.signal("TERM"),
            None => {
                let _ = Command::new("kill")
                    .args(["-TERM", &self.id().to_string()])
                    .status();
            }
        }
        let until = Instant::now() + grace;
        while Instant::now() < until && !matches!(lock(&self.supervised.child).try_wait(), Ok(Some(_))) {
            std::thread::sleep(LOOK);
        }
    }

    /// The process id of the program itself: in a container, its first process rather than the
    /// runc that runs it.
    #[must_use]
    pub fn program_id(&self) -> u32 {
        self.launch
            .container
            .as_ref()
            .and_then(Container::pid)
            .unwrap_or_else(|| self.id())
    }

    /// How often it has been started again after it exited.
    #[must_use]
    pub fn restarts(&self) -> u32 {
        self.supervised.restarts.load(Ordering::SeqCst)
    }

    /// Whether it has exited since it was first started (it may have been started again since).
    #[must_use]
    pub fn has_exited(&self) -> bool {
        lock(&self.supervised.exited).is_some()
            || matches!(lock(&self.supervised.child).try_wait(), Ok(Some(_)))
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

    /// Fails with the end of the log when the process has exited, even if it was started again
    /// since: while the plane starts, that is a failure to report, not to wait out.
    ///
    /// # Errors
    /// [`Error::Exited`] once it has exited.
    pub fn check_running(&self) -> Result<()> {
        let status = *lock(&self.supervised.exited);
        let status = status.or_else(|| lock(&self.supervised.child).try_wait().ok().flatten());
        match status {
            Some(status) => Err(self.exited(status)),
            None => Ok(()),
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

/// Watches `supervised` until it is told to stop, starting the process again after it exits.
fn supervise(name: &str, supervised: &Supervised, launch: &Launch, log: &Path, watchdog: Option<&Watchdog>) {
    let mut wait = FIRST_RESTART;
    let mut started = Instant::now();
    while !supervised.stop.load(Ordering::SeqCst) {
        std::thread::sleep(LOOK);
        let Ok(Some(status)) = lock(&supervised.child).try_wait() else {
            continue;
        };
        *lock(&supervised.exited) = Some(status);
        if started.elapsed() >= STEADY {
            wait = FIRST_RESTART;
        }
        note(
            log,
            &format!(
                "{name} exited ({status}); starting it again in {} s",
                wait.as_secs()
            ),
        );
        let until = Instant::now() + wait;
        while Instant::now() < until {
            if supervised.stop.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(LOOK);
        }
        // What a runc that was killed may have left under the id.
        if let Some(container) = &launch.container {
            container.delete();
        }
        match launch.start(log) {
            Ok(child) => {
                if let Some(watchdog) = watchdog {
                    let _ = watchdog.watch(child.id());
                }
                *lock(&supervised.child) = child;
                supervised.restarts.fetch_add(1, Ordering::SeqCst);
                started = Instant::now();
            }
            Err(error) => note(log, &format!("{name} could not be started again: {error}")),
        }
        wait = (wait * 2).min(LONGEST_RESTART);
    }
}

/// Appends a line of the supervisor's to a process's log.
fn note(log: &Path, line: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = writeln!(file, "[supervisor] {line}");
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.supervised.stop.store(true, Ordering::SeqCst);
        if let Some(supervisor) = self.supervisor.take() {
            let _ = supervisor.join();
        }
        // Killing runc would leave its container running.
        if let Some(container) = &self.launch.container {
            container.delete();
        }
        let mut child = lock(&self.supervised.child);
        let _ = child.kill();
        let _ = child.wait();
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
/// Cloning shares it: the supervisors tell it the ids of the processes they start again.
#[derive(Debug, Clone)]
pub(crate) struct Watchdog(Arc<WatchdogShell>);

#[derive(Debug)]
struct WatchdogShell {
    shell: Mutex<Child>,
    pids: Mutex<Option<ChildStdin>>,
}

impl Watchdog {
    /// Starts the watchdog for a plane; it deletes the containers of the runc state directory
    /// `runc_root`, and removes `dir` too, when given (a plane's own temporary directory, not one a
    /// user chose and may want to read the logs in).
    pub(crate) fn start(dir: Option<&Path>, runc_root: &Path) -> Result<Self> {
        let mut shell = Command::new("bash")
            .args([
                "-c",
                r#"pids=""; while read -r pid; do pids="$pids $pid"; done; kill -9 $pids 2>/dev/null
                if [ -d "$2" ]; then
                    for id in $(runc --root "$2" list -q 2>/dev/null); do runc --root "$2" delete --force "$id" 2>/dev/null; done
                fi
                if [ -n "$1" ]; then rm -rf "$1"; fi"#,
                "watchdog",
            ])
            .arg(dir.unwrap_or(Path::new("")))
            .arg(runc_root)
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
        Ok(Self(Arc::new(WatchdogShell {
            shell: Mutex::new(shell),
            pids: Mutex::new(Some(pids)),
        })))
    }

    /// Tells the watchdog about one more process id.
    pub(crate) fn watch(&self, pid: u32) -> Result<()> {
        let mut pids = lock(&self.0.pids);
        let pids = pids.as_mut().ok_or_else(|| Error::Io {
            action: "write to",
            path: "the watchdog".into(),
            source: std::io::ErrorKind::BrokenPipe.into(),
        })?;
        writeln!(pids, "{pid}").map_err(Error::io("write to", "the watchdog"))
    }

    /// Stops the watchdog shell. An orderly shutdown kills the processes itself, so the watchdog
    /// is stopped first: it must not signal process ids the system may already have given to
    /// someone else.
    pub(crate) fn stop(&self) {
        let mut shell = lock(&self.0.shell);
        let _ = shell.kill();
        let _ = shell.wait();
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
        let watchdog = Watchdog::start(Some(&dir), &dir.join("runc")).unwrap();
        let sleeper = Process::spawn(
            "sleep",
            Path::new("sleep"),
            &["600".to_owned()],
            &dir.join("sleep.log"),
        )
        .unwrap();
        watchdog.watch(sleeper.id()).unwrap();
        let pid = sleeper.id();
        // What the end of the test process does to the pipe.
        drop(lock(&watchdog.0.pids).take());
        let started = Instant::now();
        while dir.exists() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!dir.exists(), "the watchdog left the plane's directory");
        // Killed, and not the end of its run: the supervisor saw it exit with a signal.
        let started = Instant::now();
        while lock(&sleeper.supervised.exited).is_none() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let status = lock(&sleeper.supervised.exited).expect("the process was not killed");
        assert!(
            !status.success(),
            "the process ran to its end instead of being killed"
        );
        assert!(!Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn a_process_that_exits_is_started_again_and_counted() {
        let dir = std::env::temp_dir().join(format!("capz-restart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("short.log");
        // Runs briefly, then exits with an error, as a crashing controller does.
        let process = Process::spawn(
            "short",
            Path::new("bash"),
            &["-c".to_owned(), "echo started; sleep 0.3; exit 3".to_owned()],
            &log,
        )
        .unwrap();
        let first = process.id();
        let started = Instant::now();
        while process.restarts() == 0 && started.elapsed() < FIRST_RESTART + Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(process.restarts(), 1, "not started again");
        assert!(
            started.elapsed() + Duration::from_secs(1) >= FIRST_RESTART,
            "started again without the backoff"
        );
        assert_ne!(process.id(), first);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.matches("started").count() >= 2, "{text}");
        assert!(text.contains("[supervisor] short exited"), "{text}");
        drop(process);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
