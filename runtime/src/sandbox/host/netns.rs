//! Network namespaces made ahead of the runs that use them.
//!
//! Creating a network namespace is the single most expensive step of a
//! sandboxed launch (the kernel runs every protocol's per-namespace setup:
//! about half a millisecond on a quiet machine, measured in
//! `docs/benchmarks.md`). Nothing in a fresh, empty namespace depends on the
//! run, so a background thread keeps a few ready and a launch takes one:
//! the cost leaves the launch's critical path without any sharing between
//! runs. **Every namespace serves exactly one run** and is closed by the
//! server as soon as that run's monitor holds it; no two runs ever see the
//! same loopback, port space or abstract-socket names.
//!
//! A namespace of the pool is owned by a user namespace of its own (a
//! network namespace can only be entered with `CAP_SYS_ADMIN` over its
//! owner), which maps the server's ids to themselves. A run's monitor
//! enters that user namespace, then the network namespace, and only then
//! `unshare`s its own user, PID, mount, IPC and UTS namespaces: the run's
//! user namespace is a child of the pool's, the solver's ids are mapped as
//! before, and the solver holds no capability over the network namespace
//! (its owner is an ancestor of the solver's user namespace).
//!
//! When the pool is empty (a burst of launches) or cannot be filled (a host
//! that refuses the second user namespace level), a launch creates its
//! network namespace itself, as it would without the pool: the pool only
//! ever changes when the work is done, never what a run gets.
//!
//! The namespaces are made by [`child::make_netns`](super::super::child).

use super::super::child::{IdMaps, NetNs, block_all_signals, make_netns};
use super::ahead::MadeAhead;

/// A pool of ready network namespaces, refilled by a background thread.
/// Dropping the pool stops the thread.
#[derive(Debug)]
pub(crate) struct NetPool {
    ready: MadeAhead<NetNs>,
}

impl NetPool {
    /// Makes one namespace now (to find out whether the host allows it)
    /// and starts the thread that keeps `target` ready
    /// ([`SandboxConfig::made_ahead`](super::super::SandboxConfig::made_ahead)).
    /// `None` for a `target` of 0, when the host refuses or when the thread
    /// cannot start; launches then make their own namespaces.
    pub(crate) fn start(target: usize) -> Option<Self> {
        if target == 0 {
            return None;
        }
        let maps = IdMaps::identity();
        let first = match make_netns(&maps) {
            Ok(ns) => ns,
            Err(e) => {
                tracing::info!(error = %e, "network namespaces are made per launch (no pool)");
                return None;
            }
        };
        let mut signals_blocked = false;
        let refill = move || {
            if !signals_blocked {
                block_all_signals();
                signals_blocked = true;
            }
            make_netns(&maps)
        };
        match MadeAhead::start(
            "hardened-mcp-netns",
            "network namespaces",
            target,
            vec![first],
            refill,
        ) {
            Ok(ready) => Some(Self { ready }),
            Err(e) => {
                tracing::info!(error = %e, "network namespaces are made per launch (no pool)");
                None
            }
        }
    }

    /// A ready namespace, if there is one; wakes the thread to make the
    /// next.
    pub(crate) fn take(&self) -> Option<NetNs> {
        self.ready.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_net() -> (u64, u64) {
        let st = rustix::fs::stat("/proc/self/ns/net").unwrap();
        (st.st_dev as u64, st.st_ino as u64)
    }

    #[test]
    fn pool_hands_out_each_namespace_once() {
        let Some(pool) = NetPool::start(2) else {
            return;
        };
        // Every namespace taken stays open (so no inode is reused) and
        // differs from every other and from ours.
        let mut held = Vec::new();
        let mut seen = std::collections::BTreeSet::from([own_net()]);
        for _ in 0..8 {
            // The thread refills in the background; an empty pool is a
            // valid answer (the launch makes its own).
            if let Some(ns) = pool.take() {
                assert!(
                    seen.insert({
                        let st = rustix::fs::fstat(&ns.net).unwrap();
                        (st.st_dev as u64, st.st_ino as u64)
                    }),
                    "a namespace handed out twice"
                );
                held.push(ns);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!held.is_empty());
    }
}
