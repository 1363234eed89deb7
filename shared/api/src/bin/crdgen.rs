//! Writes the CRDs of every kind into a directory (default `deploy/crds`).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "deploy/crds".into()));
    match write_all(&dir) {
        Ok(count) => {
            println!("wrote {count} CRDs to {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("crdgen: {err}");
            ExitCode::FAILURE
        }
    }
}

fn write_all(dir: &std::path::Path) -> Result<usize, String> {
    std::fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    let files = capz_api::crd::all().map_err(|err| format!("cannot generate the CRDs: {err}"))?;
    for file in &files {
        let path = dir.join(&file.file_name);
        let yaml = capz_api::crd::to_yaml(&file.crd)
            .map_err(|err| format!("cannot render {}: {err}", file.file_name))?;
        std::fs::write(&path, yaml).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    }
    let path = dir.join(capz_api::crd::KUSTOMIZATION);
    std::fs::write(&path, capz_api::crd::kustomization(&files))
        .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    Ok(files.len())
}
