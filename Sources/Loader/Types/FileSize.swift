import FoundationEssentials
#if os(Linux)
import CFileSystem
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a file's `stat` says about how many bytes reading it gives.
package enum FileSize {
    /// The bytes reading the file at `path` (described by `info`) gives, when its size says so: a regular
    /// file's size, except for files of the kernel's pseudo file systems (proc, sysfs, cgroup, debugfs and their kin),
    /// whose sizes (0, or a page) say nothing of their contents; `nil` for those and for pipes, FIFOs and devices,
    /// which are read to their end.
    package static func readable(_ info: stat, path: String) -> Int64? {
        guard info.st_mode & S_IFMT == S_IFREG else { return nil }
        let size = Int64(info.st_size)
        // Only the sizes pseudo files report are worth a look at where the file lives (realpath walks the path).
        guard size == 0 || size == 4096, isPseudoFile(path) else { return size }
        return nil
    }

    /// Whether `path` lies (through any links) on a pseudo file system, wherever it is mounted (a container's
    /// `/host/proc` too): asked of the file system, not read from the path.
    /// From linux/magic.h: PROC_SUPER_MAGIC, SYSFS_MAGIC, CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, DEBUGFS_MAGIC,
    /// TRACEFS_MAGIC, SECURITYFS_MAGIC and CONFIGFS_MAGIC: each file's size is 0 or a page, whatever it holds
    /// (a cgroup's `cpu.shares` says 0 and holds `1024`).
    private static let pseudoFileSystems: Set<Int64> = [
        0x9FA0, 0x6265_6572, 0x0027_E0EB, 0x6367_7270, 0x6462_6720, 0x7472_6163, 0x7363_6673, 0x6265_6570,
    ]

    private static func isPseudoFile(_ path: String) -> Bool {
        #if os(Linux)
        var system = statfs()
        guard statfs(path, &system) == 0 else { return false }
        return pseudoFileSystems.contains(Int64(system.f_type))
        #else
        guard let resolved = realpath(path, nil) else { return false }
        defer { free(resolved) }
        let real = String(cString: resolved)
        return real.hasPrefix("/proc/") || real.hasPrefix("/sys/")
        #endif
    }
}
