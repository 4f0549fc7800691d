//! The store's calls into the C library, the only unsafe code of the crate:
//! the credentials of the process at the other end of a Unix socket
//! (`SO_PEERCRED`; std's `UnixStream::peer_cred` is not stable yet), and a
//! lower CPU priority for the threads that answer other processes' reads.

#![allow(unsafe_code)]

use std::io;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;

/// The process at the other end of a socket, as it was when it connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Peer {
    /// Its process id.
    pub(crate) pid: u32,
    /// Its effective uid.
    pub(crate) uid: u32,
}

/// The peer of `stream`.
pub(crate) fn peer(stream: &UnixStream) -> io::Result<Peer> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a valid, writable `ucred` of `len` bytes that
    // outlives the call; the descriptor is open for as long as `stream`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != std::mem::size_of::<libc::ucred>() {
        return Err(io::Error::other("SO_PEERCRED returned a short answer"));
    }
    Ok(Peer {
        pid: u32::try_from(cred.pid).unwrap_or(0),
        uid: cred.uid,
    })
}

/// The effective uid of this process.
pub(crate) fn euid() -> u32 {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Lowers the CPU priority of the calling thread to `nice` (Linux keeps a
/// nice value per thread), so that a thread answering a reader yields the
/// cores to the writer when both want them. Best effort: a failure is
/// returned for the caller to ignore or log.
pub(crate) fn lower_thread_priority(nice: i32) -> io::Result<()> {
    // SAFETY: `gettid` has no preconditions; `setpriority` only reads its
    // integer arguments.
    let rc = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_peer_of_a_pair_is_this_process() {
        let (a, _b) = UnixStream::pair().unwrap();
        let me = std::fs::metadata("/proc/self").unwrap().uid();
        let p = peer(&a).unwrap();
        assert_eq!((p.uid, p.pid), (me, std::process::id()));
    }
}
