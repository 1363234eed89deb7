//! Writes the CRDs of every kind into a directory (default `deploy/crds`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "deploy/crds".into()));
    if let Err(err) = std::fs::create_dir_all(&dir) {
        eprintln!("crdgen: cannot create {}: {err}", dir.display());
        return ExitCode::FAILURE;
    }
    for file in capz_api::crd::all() {
        let path = dir.join(&file.file_name);
        let written = capz_api::crd::to_yaml(&file.crd)
            .map_err(|err| err.to_string())
            .and_then(|yaml| std::fs::write(&path, yaml).map_err(|err| err.to_string()));
        if let Err(err) = written {
            eprintln!("crdgen: cannot write {}: {err}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
