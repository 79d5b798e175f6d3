//! Per-run resource limits and the server ceilings they are checked against:
//! per *process* (rlimits) and per *run*, for the whole tree (the resource
//! envelope: cgroup, tmpfs sizes, the disk monitor; see [`super`]).

use std::fmt;
use std::time::Duration;

use super::error::{ConfigError, SandboxError};

/// A share of the host's CPUs in thousandths of a core (a cgroup CPU quota):
/// `1500` is 1.5 cores' worth of CPU time per wall-clock second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuShare(u32);

impl CpuShare {
    /// The smallest share: 0.01 core (the quota granularity, 1 ms per 100 ms).
    pub const MIN: CpuShare = CpuShare(10);

    /// `n` thousandths of a core; `None` below [`CpuShare::MIN`].
    pub const fn millicores(n: u32) -> Option<Self> {
        if n < Self::MIN.0 { None } else { Some(Self(n)) }
    }

    /// `cores` cores (`1.5`), rounded to a thousandth; `None` when not
    /// finite, below [`CpuShare::MIN`], or above 1,000,000 cores.
    pub fn cores(cores: f64) -> Option<Self> {
        if !cores.is_finite() || !(0.0..=1e6).contains(&cores) {
            return None;
        }
        // In range and finite: the cast cannot saturate.
        Self::millicores((cores * 1000.0).round() as u32)
    }

    /// The share in thousandths of a core.
    pub const fn as_millicores(self) -> u32 {
        self.0
    }

    /// The cgroup quota for `period_us`: microseconds of CPU time per period.
    pub(crate) fn quota_us(self, period_us: u64) -> u64 {
        period_us.saturating_mul(u64::from(self.0)) / 1000
    }
}

impl fmt::Display for CpuShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03} cores", self.0 / 1000, self.0 % 1000)
    }
}

/// Resource limits of one run, set per run with
/// [`RunRequest::limits`](super::RunRequest::limits) and checked against
/// [`SandboxConfig::ceilings`](super::SandboxConfig::ceilings) at launch.
///
/// ```
/// use hardened_mcp::sandbox::{CpuShare, Limits};
///
/// let small = Limits {
///     memory: 256 << 20,
///     processes: 8,
///     cpu_share: CpuShare::cores(0.5).unwrap(),
///     disk_bytes: 64 << 20,
///     ..Limits::default()
/// };
/// assert!(small.check_within(&Limits::default_ceilings()).is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time after which the whole tree is killed.
    pub wall_time: Duration,
    /// CPU time of each solver process (`RLIMIT_CPU`, whole seconds,
    /// rounded up): `SIGXCPU` at the limit, `SIGKILL` one second later. Per
    /// process, as all rlimits are; [`Limits::cpu_share`] bounds the tree.
    pub cpu_time: Duration,
    /// Largest file the solver may write, bytes (`RLIMIT_FSIZE`; at most
    /// [`Limits::disk_bytes`] is applied).
    pub file_size: u64,
    /// Open file descriptors of each process (`RLIMIT_NOFILE`), at least 3.
    pub open_files: u64,
    /// Address-space ceiling of each process, bytes (`RLIMIT_AS`), if any;
    /// [`Limits::memory`] bounds the tree.
    pub address_space: Option<u64>,
    /// Bytes kept from the start of each of stdout and stderr.
    pub log_head: usize,
    /// Bytes kept from the end of each of stdout and stderr.
    pub log_tail: usize,
    /// Memory of the whole run, bytes: resident memory, dirtied page cache
    /// and the files of its `/tmp` and `/dev/shm`, no swap (a cgroup memory
    /// limit). At the limit the OOM killer ends a process of the run
    /// ([`LimitHit::Memory`](super::LimitHit::Memory)). At least 16 MiB.
    pub memory: u64,
    /// Processes and threads alive at once (a cgroup pids limit; the monitor
    /// and init not counted); a fork past it fails with `EAGAIN`. At least 1.
    pub processes: u64,
    /// CPU time per wall-clock second of the whole tree (a cgroup CPU
    /// quota): a run with many threads is throttled to this share.
    pub cpu_share: CpuShare,
    /// Bytes allocated beneath the run directory, deleted files held open
    /// included; the disk monitor kills the tree past it
    /// ([`LimitHit::DiskBytes`](super::LimitHit::DiskBytes)). At least 64 KiB.
    pub disk_bytes: u64,
    /// Entries (files, directories, links) beneath the run directory, the
    /// server's own records included; past it the tree is killed
    /// ([`LimitHit::DiskFiles`](super::LimitHit::DiskFiles)). At least 16.
    pub disk_files: u64,
    /// Size of the run's private `/tmp` (a tmpfs, counted in
    /// [`Limits::memory`] as it fills), bytes; at least 4 KiB.
    pub tmp_size: u64,
    /// Size of the run's private `/dev/shm` (POSIX shared memory), bytes;
    /// at least 4 KiB.
    pub shm_size: u64,
}

impl Default for Limits {
    /// Conservative defaults: 60 s wall, 60 s CPU, 256 MiB files, 64 open
    /// files, no address-space limit, 64 KiB head and tail per stream; for
    /// the tree 1 GiB of memory, 64 processes, one core, 1 GiB and 10,000
    /// entries in the run directory, 64 MiB of `/tmp` and of `/dev/shm`.
    fn default() -> Self {
        Self {
            wall_time: Duration::from_secs(60),
            cpu_time: Duration::from_secs(60),
            file_size: 256 << 20,
            open_files: 64,
            address_space: None,
            log_head: 64 << 10,
            log_tail: 64 << 10,
            memory: 1 << 30,
            processes: 64,
            cpu_share: CpuShare(1000),
            disk_bytes: 1 << 30,
            disk_files: 10_000,
            tmp_size: 64 << 20,
            shm_size: 64 << 20,
        }
    }
}

/// Smallest accepted envelope values (a solver cannot start below them).
const MIN_MEMORY: u64 = 16 << 20;
const MIN_DISK_BYTES: u64 = 64 << 10;
const MIN_DISK_FILES: u64 = 16;
const MIN_TMPFS: u64 = 4096;

impl Limits {
    /// The largest limits a server allows by default: one hour, 4 GiB
    /// files, 1024 descriptors, 1 MiB of head and tail per stream; for the
    /// tree 16 GiB of memory, 4096 processes, 64 cores, 64 GiB and a
    /// million entries in the run directory, 4 GiB of `/tmp` and of
    /// `/dev/shm`. A server narrows them to what its host can give.
    pub fn default_ceilings() -> Self {
        Self {
            wall_time: Duration::from_secs(3600),
            cpu_time: Duration::from_secs(3600),
            file_size: 4 << 30,
            open_files: 1024,
            address_space: None,
            log_head: 1 << 20,
            log_tail: 1 << 20,
            memory: 16 << 30,
            processes: 4096,
            cpu_share: CpuShare(64_000),
            disk_bytes: 64 << 30,
            disk_files: 1_000_000,
            tmp_size: 4 << 30,
            shm_size: 4 << 30,
        }
    }

    /// Checks these limits against `ceilings` and the minimums. When the
    /// ceilings set an address-space limit, a run must set one within it.
    pub fn check_within(&self, ceilings: &Limits) -> Result<(), SandboxError> {
        let within = self.first_invalid().is_none()
            && self.wall_time <= ceilings.wall_time
            && self.cpu_time <= ceilings.cpu_time
            && self.file_size <= ceilings.file_size
            && self.open_files <= ceilings.open_files
            && self.log_head <= ceilings.log_head
            && self.log_tail <= ceilings.log_tail
            && self.memory <= ceilings.memory
            && self.processes <= ceilings.processes
            && self.cpu_share <= ceilings.cpu_share
            && self.disk_bytes <= ceilings.disk_bytes
            && self.disk_files <= ceilings.disk_files
            && self.tmp_size <= ceilings.tmp_size
            && self.shm_size <= ceilings.shm_size
            && ceilings
                .address_space
                .is_none_or(|c| self.address_space.is_some_and(|a| a <= c));
        within.then_some(()).ok_or(SandboxError::LimitOutOfBounds)
    }

    /// Validates limits used as server ceilings.
    pub(crate) fn validate_ceilings(&self) -> Result<(), ConfigError> {
        match self.first_invalid() {
            Some(name) => Err(ConfigError::InvalidLimit(name)),
            None => Ok(()),
        }
    }

    /// The first field below its minimum, by name.
    fn first_invalid(&self) -> Option<&'static str> {
        let checks: [(&'static str, bool); 8] = [
            ("wall_time", !self.wall_time.is_zero()),
            ("cpu_time", !self.cpu_time.is_zero()),
            ("open_files", self.open_files >= 3),
            ("memory", self.memory >= MIN_MEMORY),
            ("processes", self.processes >= 1),
            ("disk_bytes", self.disk_bytes >= MIN_DISK_BYTES),
            ("disk_files", self.disk_files >= MIN_DISK_FILES),
            ("tmp_size", self.tmp_size.min(self.shm_size) >= MIN_TMPFS),
        ];
        checks.iter().find(|(_, ok)| !ok).map(|(name, _)| *name)
    }

    /// `RLIMIT_CPU` seconds: the CPU time rounded up to whole seconds.
    pub(crate) fn cpu_seconds(&self) -> u64 {
        let s = self.cpu_time.as_secs();
        s.saturating_add(u64::from(self.cpu_time.subsec_nanos() > 0))
    }

    /// `RLIMIT_FSIZE`: no single file larger than the run's disk budget.
    pub(crate) fn file_size_rlimit(&self) -> u64 {
        self.file_size.min(self.disk_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default limits, changed by `change`.
    fn changed(change: impl FnOnce(&mut Limits)) -> Limits {
        let mut l = Limits::default();
        change(&mut l);
        l
    }

    #[test]
    fn defaults_fit_default_ceilings() {
        let ceilings = Limits::default_ceilings();
        assert_eq!(Limits::default().check_within(&ceilings), Ok(()));
        assert_eq!(Limits::default_ceilings().validate_ceilings(), Ok(()));
    }

    #[test]
    fn each_field_above_its_ceiling_is_refused() {
        let cases: [fn(&mut Limits); 21] = [
            |l| l.wall_time += Duration::from_millis(1),
            |l| l.cpu_time += Duration::from_secs(1),
            |l| l.file_size += 1,
            |l| l.open_files += 1,
            |l| l.log_head += 1,
            |l| l.log_tail += 1,
            |l| l.memory += 1,
            |l| l.processes += 1,
            |l| l.cpu_share = CpuShare(1001),
            |l| l.disk_bytes += 1,
            |l| l.disk_files += 1,
            |l| l.tmp_size += 1,
            |l| l.shm_size += 1,
            |l| l.open_files = 2,
            |l| l.wall_time = Duration::ZERO,
            |l| l.memory = MIN_MEMORY - 1,
            |l| l.processes = 0,
            |l| l.disk_bytes = MIN_DISK_BYTES - 1,
            |l| l.disk_files = MIN_DISK_FILES - 1,
            |l| l.tmp_size = MIN_TMPFS - 1,
            |l| l.shm_size = 0,
        ];
        for f in cases {
            let l = changed(f);
            let r = l.check_within(&Limits::default());
            assert_eq!(r, Err(SandboxError::LimitOutOfBounds), "{l:?}");
        }
    }

    #[test]
    fn ceilings_below_the_minimums_are_named() {
        let invalid = ConfigError::InvalidLimit;
        let c = changed(|c| c.memory = 0);
        assert_eq!(c.validate_ceilings(), Err(invalid("memory")));
        let c = changed(|c| c.processes = 0);
        assert_eq!(c.validate_ceilings(), Err(invalid("processes")));
    }

    #[test]
    fn address_space_ceiling_requires_a_limit() {
        let c = changed(|c| c.address_space = Some(1 << 30));
        assert!(Limits::default().check_within(&c).is_err());
        let l = changed(|l| l.address_space = Some(1 << 29));
        assert!(l.check_within(&c).is_ok());
    }

    #[test]
    fn cpu_seconds_round_up() {
        let l = changed(|l| l.cpu_time = Duration::from_millis(1500));
        assert_eq!(l.cpu_seconds(), 2);
    }

    #[test]
    fn cpu_shares_convert_and_refuse_nonsense() {
        assert_eq!(CpuShare::cores(1.5), CpuShare::millicores(1500));
        let quota = CpuShare::cores(1.5).map(|c| c.quota_us(100_000));
        assert_eq!(quota, Some(150_000));
        for nonsense in [0.001, f64::NAN, -1.0, f64::INFINITY] {
            assert_eq!(CpuShare::cores(nonsense), None, "{nonsense}");
        }
        assert_eq!(CpuShare::millicores(9), None);
        assert_eq!(CpuShare(1500).to_string(), "1.500 cores");
    }

    #[test]
    fn no_file_exceeds_the_disk_budget() {
        let l = changed(|l| l.disk_bytes = 1 << 20);
        assert_eq!(l.file_size_rlimit(), 1 << 20);
        assert_eq!(Limits::default().file_size_rlimit(), 256 << 20);
    }
}
