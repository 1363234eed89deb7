//! The vmss controller: the scale set of each AzureMachinePool.

use capz_kit::identity::IdentitySettings;

fn main() -> std::process::ExitCode {
    capz_kit::runner::main(capz_vmss::ID, env!("CARGO_PKG_VERSION"), |ctx| async move {
        capz_vmss::run(ctx, IdentitySettings::from_env()?).await
    })
}
