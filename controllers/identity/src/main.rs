//! The identity controller's binary: the kit's runner around [`capz_identity::run`].

use capz_kit::identity::IdentitySettings;

fn main() -> std::process::ExitCode {
    capz_kit::runner::main(capz_identity::ID, env!("CARGO_PKG_VERSION"), |ctx| async move {
        capz_identity::run(ctx, IdentitySettings::from_env()?).await
    })
}
