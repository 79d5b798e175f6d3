//! Credential decoys: files no MCP server needs and many would be glad
//! of — an SSH private key, cloud and cluster credentials, stored Git
//! passwords — planted in the confined server's scratch home
//! ([`crate::confine`]) and watched with inotify. None of them is real
//! (each holds the audit's canary), none is named by any probe, and the
//! audit does not open them after planting: any open is the server's (or
//! of what it started), an effect outside everything it was asked.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Mutex;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// The decoys, by their path in the home, each with its content (`{}`:
/// the canary).
const DECOYS: &[(&str, &str)] = &[
    (
        ".ssh/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n",
    ),
    (
        ".aws/credentials",
        "[default]\naws_access_key_id = AKIA{}\naws_secret_access_key = {}\n",
    ),
    (
        ".kube/config",
        "apiVersion: v1\nkind: Config\nusers:\n- name: decoy\n  user:\n    token: {}\n",
    ),
    (".git-credentials", "https://decoy:{}@git.invalid\n"),
    (
        ".docker/config.json",
        "{\"auths\": {\"registry.invalid\": {\"auth\": \"{}\"}}}\n",
    ),
];

/// The planted decoys of one home and the inotify instance that watches
/// them.
#[derive(Debug)]
pub struct Decoys {
    inotify: OwnedFd,
    /// Each watch and the decoy it is on.
    watches: Vec<(i32, &'static str)>,
    /// Events are read in whole batches, one reader at a time.
    buf: Mutex<Vec<MaybeUninit<u8>>>,
}

impl Decoys {
    /// Plants every decoy under `home` (owner-only files, holding
    /// `canary`) and watches each for being opened.
    pub fn plant(home: &Path, canary: &str) -> io::Result<Self> {
        let inotify = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        let mut watches = Vec::new();
        for (name, content) in DECOYS {
            let path = home.join(name);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            io::Write::write_all(&mut file, content.replace("{}", canary).as_bytes())?;
            drop(file);
            let wd = inotify::add_watch(&inotify, &path, WatchFlags::OPEN)?;
            watches.push((wd, *name));
        }
        Ok(Self {
            inotify,
            watches,
            buf: Mutex::new(vec![MaybeUninit::uninit(); 4096]),
        })
    }

    /// The decoys opened since the last call, each once, in planting order.
    pub fn opened(&self) -> Vec<&'static str> {
        let Ok(mut buf) = self.buf.lock() else {
            return Vec::new();
        };
        let mut opened = Vec::new();
        let mut events = inotify::Reader::new(&self.inotify, &mut buf[..]);
        while let Ok(e) = events.next() {
            let lost = e.events().contains(ReadFlags::QUEUE_OVERFLOW);
            for (wd, name) in &self.watches {
                if (lost || *wd == e.wd()) && !opened.contains(name) {
                    opened.push(*name);
                }
            }
        }
        opened.sort_by_key(|n| DECOYS.iter().position(|(d, _)| d == n));
        opened
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_of_a_decoy_is_seen_once_and_planting_is_not() {
        let home = tempfile::tempdir().unwrap();
        let decoys = Decoys::plant(home.path(), "CANARY").unwrap();
        assert_eq!(
            decoys.opened(),
            Vec::<&str>::new(),
            "planting opens nothing"
        );
        let key = std::fs::read_to_string(home.path().join(".ssh/id_ed25519")).unwrap();
        assert!(key.contains("CANARY"));
        let _ = std::fs::read(home.path().join(".aws/credentials")).unwrap();
        let _ = std::fs::read(home.path().join(".ssh/id_ed25519")).unwrap();
        assert_eq!(decoys.opened(), [".ssh/id_ed25519", ".aws/credentials"]);
        assert_eq!(decoys.opened(), Vec::<&str>::new());
        // A file beside them is not a decoy.
        std::fs::write(home.path().join(".ssh/known_hosts"), "x").unwrap();
        let _ = std::fs::read(home.path().join(".ssh/known_hosts")).unwrap();
        assert_eq!(decoys.opened(), Vec::<&str>::new());
    }
}
