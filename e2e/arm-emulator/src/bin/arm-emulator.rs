//! Serves the ARM emulator until interrupted.
//!
//! Usage: `arm-emulator [--listen ADDRESS]` (default `127.0.0.1:8080`). When it serves, it prints one
//! line: its base URL.

use std::net::SocketAddr;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let mut listen: SocketAddr = ([127, 0, 0, 1], 8080).into();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--listen", Some(value)) => match value.parse() {
                Ok(address) => listen = address,
                Err(err) => return usage(&format!("--listen {value}: {err}")),
            },
            _ => return usage(&format!("unexpected argument {arg}")),
        }
    }
    let running = match arm_emulator::start(listen, arm_emulator::Config::default()).await {
        Ok(running) => running,
        Err(err) => {
            eprintln!("arm-emulator: cannot listen on {listen}: {err}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", running.base_url());
    if let Err(err) = tokio::signal::ctrl_c().await {
        eprintln!("arm-emulator: cannot wait for Ctrl-C: {err}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("arm-emulator: {problem}\nusage: arm-emulator [--listen ADDRESS]");
    ExitCode::from(2)
}
