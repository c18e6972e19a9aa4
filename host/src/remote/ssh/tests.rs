//! The destination rule, the quoting, the options and the shared connection.

use std::time::Duration;

use super::*;

#[test]
fn destinations_that_could_become_options_or_shell_are_refused() {
    for good in [
        "target",
        "10.0.0.1",
        "root@bf-arm",
        "fe80::1",
        "a-b.example.org",
    ] {
        assert!(valid_destination(good), "{good}");
    }
    for bad in [
        "",
        "-oProxyCommand=x",
        "a b",
        "h;rm",
        "$(x)",
        "@host",
        "u@",
        "h`x`",
    ] {
        assert!(!valid_destination(bad), "{bad}");
    }
}

#[test]
fn a_destination_that_could_be_an_option_is_refused_naming_it() {
    let err = Ssh::new("ssh".into(), None, None)
        .argv("-oProxyCommand=x", &["true"])
        .expect_err("option");
    assert_eq!(
        err.to_string(),
        "\"-oProxyCommand=x\" is not a host: use HOST, USER@HOST or an IP address"
    );
}

#[test]
fn the_remote_command_is_quoted_word_by_word() {
    let ssh = Ssh::new("ssh".into(), Some(2222), Some("/id".into()));
    let argv = ssh
        .argv("target", &["ib_write_bw", "-d", "my dev", "$(x)"])
        .expect("argv");
    let last = argv.last().expect("last").to_string_lossy().into_owned();
    assert_eq!(
        shlex::split(&last).expect("split"),
        ["ib_write_bw", "-d", "my dev", "$(x)"]
    );
    assert!(argv.iter().any(|a| a == "BatchMode=yes"));
    assert!(argv.windows(2).any(|w| w[0] == "-p" && w[1] == "2222"));
    assert!(argv.windows(2).any(|w| w[0] == "-i" && w[1] == "/id"));
    assert_eq!(argv[argv.len() - 2], "target");
    assert_eq!(argv[argv.len() - 3], "--");
    let err = ssh.argv("target", &["a\0b"]).expect_err("NUL");
    assert!(matches!(err, SshError::Unquotable(_)), "{err}");
}

#[test]
fn sessions_ride_on_the_master_only_once_its_socket_exists() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("dir");
    // A stand-in for `ssh -M`: creates the ControlPath socket file and stays up.
    let fake = dir.path().join("fake-ssh");
    std::fs::write(
        &fake,
        "#!/bin/sh\nfor a; do case $a in ControlPath=*) : > \"${a#ControlPath=}\";; esac; done\nexec sleep 30\n",
    )
    .expect("write");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut ssh = Ssh::new(fake, None, None);
    let master = ssh
        .start_master("target", Duration::from_secs(10))
        .expect("master");
    let argv = ssh.argv("target", &["true"]).expect("argv");
    let path = format!("ControlPath={}", master.socket().display());
    assert!(argv.iter().any(|a| a.to_string_lossy() == path), "{argv:?}");
    let socket = master.socket().to_owned();
    drop(master);
    assert!(!socket.exists(), "the socket is removed with the master");

    let mut failing = Ssh::new("false".into(), None, None);
    assert!(failing
        .start_master("target", Duration::from_secs(5))
        .is_none());
    let argv = failing.argv("target", &["true"]).expect("argv");
    assert!(!argv
        .iter()
        .any(|a| a.to_string_lossy().starts_with("ControlPath")));
}
