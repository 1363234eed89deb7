//! The compute controller: the virtual machine of each AzureMachine.

use capz_kit::identity::IdentitySettings;

fn main() -> std::process::ExitCode {
    capz_kit::runner::main(capz_compute::ID, env!("CARGO_PKG_VERSION"), |ctx| async move {
        capz_compute::run(ctx, IdentitySettings::from_env()?).await
    })
}
