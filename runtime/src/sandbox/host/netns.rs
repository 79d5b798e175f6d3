//! Network namespaces made ahead of the runs that use them
//! ([`super::ahead`]): creating one is a launch's costliest step (every
//! protocol's per-namespace setup), and an empty namespace depends on
//! nothing of the run. **Every namespace serves exactly one run** and is
//! closed by the server once that run's monitor holds it: no two runs share
//! a loopback, port space or abstract-socket names.
//!
//! A pooled namespace is owned by a user namespace of its own (entering a
//! network namespace takes `CAP_SYS_ADMIN` over its owner) that maps the
//! server's ids to themselves. A run's monitor enters both, then `unshare`s
//! its own user, PID, mount, IPC and UTS namespaces: the run's user
//! namespace is a child of the pool's, so the solver holds no capability
//! over the network namespace. A host that refuses this second user
//! namespace level gets no pool. The namespaces are made by
//! [`child::make_netns`](super::super::child).

use super::super::child::{IdMaps, NetNs, block_all_signals, make_netns};
use super::ahead::MadeAhead;

/// A pool of ready network namespaces; dropping it stops its thread.
#[derive(Debug)]
pub(crate) struct NetPool {
    ready: MadeAhead<NetNs>,
}

impl NetPool {
    /// Makes one namespace now (does the host allow it?) and starts the
    /// thread that keeps `target` ready
    /// ([`SandboxConfig::made_ahead`](super::super::SandboxConfig::made_ahead)).
    /// `None` for a `target` of 0, when the host refuses or the thread
    /// cannot start: launches then make their own namespaces.
    pub(crate) fn start(target: usize) -> Option<Self> {
        if target == 0 {
            return None;
        }
        let no_pool = |e: &std::io::Error| {
            tracing::info!(error = %e, "network namespaces are made per launch (no pool)");
        };
        let maps = IdMaps::identity();
        let first = make_netns(&maps).inspect_err(no_pool).ok()?;
        let mut signals_blocked = false;
        let refill = move || {
            if !signals_blocked {
                block_all_signals();
                signals_blocked = true;
            }
            make_netns(&maps)
        };
        let name = "hardened-mcp-netns";
        let ready = MadeAhead::start(name, "network namespaces", target, vec![first], refill);
        ready.inspect_err(no_pool).ok().map(|ready| Self { ready })
    }

    /// A ready namespace, if any; wakes the thread to make the next.
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
        // Each taken stays open (no inode reused) and differs from the rest.
        let mut held = Vec::new();
        let mut seen = std::collections::BTreeSet::from([own_net()]);
        for _ in 0..8 {
            // An empty pool is a valid answer (the launch makes its own).
            if let Some(ns) = pool.take() {
                let st = rustix::fs::fstat(&ns.net).unwrap();
                let taken = (st.st_dev as u64, st.st_ino as u64);
                assert!(seen.insert(taken), "a namespace handed out twice");
                held.push(ns);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!held.is_empty());
    }
}
