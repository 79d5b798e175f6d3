//! The private file-system view, built and entered by the run's init:
//! the plan's data, read after the fork, and the mounts that build it
//! (the plan itself is made at start by [`view`](super::super::view)).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{CWD, Mode, OFlags, mkdirat, openat, symlinkat};
use rustix::io::Errno;
use rustix::mount::{
    MountFlags, MountPropagationFlags, MoveMountFlags, OpenTreeFlags, UnmountFlags, mount,
    mount_bind_recursive, mount_change, move_mount, open_tree, unmount,
};
use rustix::process::{chdir, pivot_root};

use super::sys::cvt;

/// The run directory in the view ([`VIEW_RUN_DIR`](super::super::VIEW_RUN_DIR)),
/// the solver's working directory.
pub(crate) const VIEW_RUN_DIR_C: &CStr = c"/work";

/// The solver's user id inside its user namespace.
pub const SOLVER_UID: u32 = 1000;

/// The solver's group id inside its user namespace.
pub const SOLVER_GID: u32 = 1000;

/// Subtrees of the fresh `/proc` made read-only (bind on themselves).
const PROC_READ_ONLY: [&CStr; 4] = [
    c"/tmp/proc/sys",
    c"/tmp/proc/sysrq-trigger",
    c"/tmp/proc/irq",
    c"/tmp/proc/bus",
];

// linux/mount.h values for `mount_setattr`.
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;

/// `struct mount_attr` (version 0, 32 bytes).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Read-only, set-uid bits and devices ignored: the host trees.
pub(crate) const READ_ONLY: u64 = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
/// Read-only and not executable: the devices.
pub(crate) const DEVICE: u64 = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;

/// Something created on the new root before the sources are attached.
#[derive(Debug)]
pub(crate) enum Node {
    /// An empty directory.
    Dir(CString),
    /// An empty file (a bind target).
    File(CString),
    /// A symbolic link.
    Symlink {
        /// What the link points to.
        target: CString,
        /// Where the link is.
        link: CString,
    },
}

/// A host source attached at a staged path.
#[derive(Debug)]
pub(crate) struct Bind {
    /// The host path cloned.
    pub(crate) source: CString,
    /// The staged path it is attached at.
    pub(crate) target: CString,
    /// `MOUNT_ATTR_*` flags set on the clone.
    pub(crate) attrs: u64,
    /// Whether the clone takes the submounts along.
    pub(crate) recursive: bool,
    /// Device and inode the clone must have.
    pub(crate) expect: Option<(u64, u64)>,
}

/// The view of one solver, prepared (paths encoded, nodes ordered) once at
/// server start. The run-specific part is [`RunMounts`].
#[derive(Debug)]
pub(crate) struct ViewPlan {
    /// Made on the new root, parents first.
    pub(crate) nodes: Vec<Node>,
    /// Host sources, cloned before anything is mounted.
    pub(crate) binds: Vec<Bind>,
    /// Generated files: staged path and content.
    pub(crate) files: Vec<(CString, Vec<u8>)>,
    /// The solver executable's path inside the view, for `exec`.
    pub(crate) solver: CString,
    /// Device and inode the solver executable must have.
    pub(crate) solver_id: (u64, u64),
    /// Where the run directory is attached (staged).
    pub(crate) run_target: CString,
    /// Whether the run gets a network namespace of its own.
    pub(crate) private_network: bool,
}

/// The run-specific mounts, prepared before the fork.
#[derive(Debug)]
pub(crate) struct RunMounts {
    /// Device and inode of the run directory (the init's working directory).
    pub(crate) run_dir: (u64, u64),
    /// The writable subdirectory: its name, staged target, device and inode.
    pub(crate) writable: Option<(CString, CString, (u64, u64))>,
    /// Mount options of the private `/tmp` (its size).
    pub(crate) tmp_options: CString,
    /// Mount options of the private `/dev/shm`.
    pub(crate) shm_options: CString,
    /// Descriptor slots for the clones, one per bind plus two (filled in the
    /// child, each emptied as it is attached; allocated here so the child
    /// does not allocate). The init fills them in memory it shares with
    /// the monitor; neither drops a plan (both end with `_exit`).
    pub(crate) slots: Vec<Option<OwnedFd>>,
}

/// Builds the view and enters it: on success the calling process's root is
/// the new root and its working directory `/`.
pub(crate) fn enter(plan: &ViewPlan, run: &mut RunMounts) -> io::Result<()> {
    // No mount event propagates between this namespace and the host's.
    mount_change(
        c"/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )?;
    // Clone every source before the stage covers anything.
    let n = plan.binds.len();
    for (i, b) in plan.binds.iter().enumerate() {
        let fd = clone_tree(&b.source, b.recursive, false, b.expect, b.attrs)?;
        run.slots[i] = Some(fd);
    }
    let nosuid_nodev = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    // The run directory is read-only when a subdirectory is the writable one.
    let run_attrs = nosuid_nodev | run.writable.as_ref().map_or(0, |_| MOUNT_ATTR_RDONLY);
    // Recursive clones: a non-recursive clone of a directory with mounts
    // beneath it (locked in this less privileged namespace) is refused.
    run.slots[n] = Some(clone_tree(c".", true, false, Some(run.run_dir), run_attrs)?);
    if let Some((name, _, id)) = &run.writable {
        run.slots[n + 1] = Some(clone_tree(name, true, true, Some(*id), nosuid_nodev)?);
    }

    // The new root.
    let hidden = MountFlags::NOSUID | MountFlags::NODEV;
    mount_fs(
        c"tmpfs",
        c"/tmp",
        hidden | MountFlags::NOEXEC,
        c"mode=0755,size=1048576,nr_inodes=4096",
    )?;
    for node in &plan.nodes {
        match node {
            Node::Dir(p) => mkdirat(CWD, p.as_c_str(), Mode::from_raw_mode(0o755))?,
            Node::File(p) => write_file(p, &[])?,
            Node::Symlink { target, link } => symlinkat(target.as_c_str(), CWD, link.as_c_str())?,
        }
    }
    for (path, content) in &plan.files {
        write_file(path, content)?;
    }

    // Attach the clones (each closed once attached).
    let targets = plan.binds.iter().map(|b| &b.target);
    let targets = targets
        .chain([&plan.run_target])
        .chain(run.writable.as_ref().map(|(_, target, _)| target));
    for (slot, target) in run.slots.iter_mut().zip(targets) {
        if let Some(fd) = slot.take() {
            move_mount(
                fd,
                c"",
                CWD,
                target.as_c_str(),
                MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
            )?;
        }
    }

    // A fresh /proc of this PID namespace (this process is its pid 1),
    // mounted while the host's /proc is still visible in this namespace, as
    // the kernel requires of an unprivileged proc mount.
    mount_fs(c"proc", c"/tmp/proc", hidden | MountFlags::NOEXEC, c"")?;
    for p in PROC_READ_ONLY {
        match mount_bind_recursive(p, p) {
            Err(Errno::NOENT) => continue,
            r => r?,
        }
        set_attrs(CWD, p, READ_ONLY, true)?;
    }
    mount_fs(c"tmpfs", c"/tmp/tmp", hidden, &run.tmp_options)?;
    // POSIX shared memory and semaphores (Python's multiprocessing):
    // private, capped like /tmp.
    mount_fs(
        c"tmpfs",
        c"/tmp/dev/shm",
        hidden | MountFlags::NOEXEC,
        &run.shm_options,
    )?;
    // Nothing more is created on the root: make it read-only.
    set_attrs(CWD, c"/tmp", READ_ONLY | MOUNT_ATTR_NOEXEC, false)?;

    // Swap roots: stack the old root on the new one, then detach it.
    chdir(c"/tmp")?;
    pivot_root(c".", c".")?;
    unmount(c".", UnmountFlags::DETACH)?;
    chdir(c"/")?;
    Ok(())
}

/// Clones the mount tree at `path` (relative to the working directory)
/// into a detached mount (`recursive`: with its submounts), refused unless
/// it is the file `expect`, with `attrs` set on it.
fn clone_tree(
    path: &CStr,
    recursive: bool,
    nofollow: bool,
    expect: Option<(u64, u64)>,
    attrs: u64,
) -> io::Result<OwnedFd> {
    let mut flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
    if recursive {
        flags |= OpenTreeFlags::AT_RECURSIVE;
    }
    if nofollow {
        flags |= OpenTreeFlags::AT_SYMLINK_NOFOLLOW;
    }
    let fd = open_tree(CWD, path, flags)?;
    if let Some(id) = expect {
        same_file(fd.as_fd(), id)?;
    }
    set_attrs(fd.as_fd(), c"", attrs, recursive)?;
    Ok(fd)
}

/// Refuses a descriptor that is not the expected file (device, inode).
pub(crate) fn same_file(fd: BorrowedFd<'_>, (dev, ino): (u64, u64)) -> io::Result<()> {
    let st = rustix::fs::fstat(fd)?;
    if st.st_dev == dev && st.st_ino == ino {
        Ok(())
    } else {
        Err(io::Error::from(Errno::STALE))
    }
}

/// `mount_setattr(2)`, the one mount call rustix does not offer: on
/// `dirfd` itself when `path` is empty.
fn set_attrs(dirfd: BorrowedFd<'_>, path: &CStr, attrs: u64, recursive: bool) -> io::Result<()> {
    if attrs == 0 {
        return Ok(());
    }
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let mut flags = if recursive { libc::AT_RECURSIVE } else { 0 };
    if path.is_empty() {
        flags |= libc::AT_EMPTY_PATH;
    }
    // SAFETY: mount_setattr with a live attribute struct of its declared size.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd.as_raw_fd(),
            path.as_ptr(),
            flags as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    })?;
    Ok(())
}

fn mount_fs(fstype: &CStr, target: &CStr, flags: MountFlags, data: &CStr) -> io::Result<()> {
    Ok(mount(fstype, target, fstype, flags, data)?)
}

fn write_file(path: &CStr, content: &[u8]) -> io::Result<()> {
    let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC;
    let fd = openat(CWD, path, flags, Mode::from_raw_mode(0o644))?;
    let mut done = 0;
    while done < content.len() {
        match rustix::io::write(&fd, &content[done..]) {
            Ok(n) => done += n,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
