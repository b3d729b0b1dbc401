// swift-tools-version: 6.0
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    // Async functions run on their caller's executor unless marked `@concurrent`: measured 37 → 22 executor
    // switches per HTTP request (Benchmarks/), each a locked look-up of the task's executor preference.
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
]

let package = Package(
    name: "swift-url-loader",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Loader", targets: ["Loader"]),
        .library(name: "DataScheme", targets: ["DataScheme"]),
        .library(name: "FileScheme", targets: ["FileScheme"]),
        .library(name: "HTTPScheme", targets: ["HTTPScheme"]),
        .library(name: "FTPScheme", targets: ["FTPScheme"]),
        .library(name: "StandardSchemes", targets: ["StandardSchemes"]),
        .library(name: "ArchiveScheme", targets: ["ArchiveScheme"]),
        .library(name: "Cookies", targets: ["Cookies"]),
        .library(name: "DiskStores", targets: ["DiskStores"]),
        .library(name: "HandlerConformance", targets: ["HandlerConformance"]),
        .library(name: "LoadURLCommand", targets: ["LoadURLCommand"]),
        .executable(name: "loadurl", targets: ["loadurl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // libcurl, the system's, for FTP only: built against its header (Debian's libcurl4-openssl-dev) and
        // loaded with dlopen at the first FTP transfer, so that other processes never map it.
        .target(name: "CCurl", path: "Sources/CCurl"),
        // zlib, the system's, for decoding gzip and deflate bodies.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        // libbrotlidec, the system's, for decoding br bodies.
        .systemLibrary(name: "CBrotli", path: "Sources/CBrotli", providers: [.apt(["libbrotli-dev"])]),
        // libzstd, the system's, for decoding zstd bodies (and, in tests, making them).
        .systemLibrary(name: "CZstd", path: "Sources/CZstd", providers: [.apt(["libzstd-dev"])]),
        // libbrotlienc, for tests that serve br bodies.
        .systemLibrary(name: "CBrotliEncoder", path: "Tests/CBrotliEncoder", providers: [.apt(["libbrotli-dev"])]),
        // statfs(2) from the C library, which Swift's Glibc module does not import.
        .systemLibrary(name: "CFileSystem", path: "Sources/CFileSystem"),
        // Core: types, sessions and tasks, registry, handler base class, middleware. No scheme lives here.
        .target(
            name: "Loader",
            dependencies: [
                "CZlib",
                "CBrotli",
                "CZstd",
                "CFileSystem",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "SystemPackage", package: "swift-system"),
                // MD5 and SHA-256 for HTTP Digest authentication.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // Scheme handlers: one target each, depending on Loader only.
        .target(name: "DataScheme", dependencies: ["Loader"], path: "Sources/Schemes/Data", swiftSettings: strict),
        .target(
            name: "FileScheme",
            dependencies: ["Loader"],
            path: "Sources/Schemes/File",
            swiftSettings: strict
        ),
        .target(
            name: "HTTPScheme",
            dependencies: [
                "Loader",
                "CZlib",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSOCKS", package: "swift-nio-extras"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                // SHA-256 of a server's public key, for pinned keys.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/Schemes/HTTP",
            swiftSettings: strict
        ),
        .target(
            name: "FTPScheme",
            dependencies: [
                "Loader", "CCurl",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/Schemes/FTP",
            swiftSettings: strict
        ),
        // Plugins: handlers that are not built in, registered by the app that wants them. The archive: handler
        // reads entries of local archives with the system's libarchive, loaded when the first archive is opened
        // (CArchive, like CCurl: only its headers, Debian's libarchive-dev, are needed to build).
        .target(name: "CArchive", path: "Plugins/Archive/CArchive"),
        .target(name: "ArchiveScheme", dependencies: ["Loader", "CArchive"], path: "Plugins/Archive/Sources", swiftSettings: strict),
        // The built-in handlers, registered in one call.
        .target(
            name: "StandardSchemes",
            dependencies: ["Loader", "DataScheme", "FileScheme", "HTTPScheme", "FTPScheme"],
            path: "Sources/Schemes/Standard",
            swiftSettings: strict
        ),
        // Cookies: a jar with RFC 6265's rules (a session's cookie store), in a target of its own for the data it
        // carries: the Public Suffix List (publicsuffix.org's rules, compiled in by scripts/public-suffix-list).
        .target(
            name: "Cookies",
            dependencies: ["Loader"],
            path: "Sources/Middleware/Cookies",
            exclude: ["PublicSuffix/public_suffix_list.LICENSE"],
            swiftSettings: strict
        ),
        // Stores kept on disk between runs: DiskResponseCache and DiskCookieJar, SQLite databases through GRDB
        // (which brings Foundation and the system's libsqlite3, so they are a target of their own; the memory
        // stores are in Loader and Cookies).
        .target(
            name: "DiskStores",
            dependencies: ["Loader", "Cookies", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Sources/Storage",
            swiftSettings: strict
        ),
        // The conformance suite handler authors run in their own tests.
        .target(name: "HandlerConformance", dependencies: ["Loader", .product(name: "Crypto", package: "swift-crypto")], path: "Sources/Conformance",
                swiftSettings: strict),
        // The command-line tool: its logic as a library (so tests can run it in-process with their own
        // schemes registered) and a thin executable.
        .target(
            name: "LoadURLCommand",
            dependencies: [
                "Loader", "StandardSchemes", "HTTPScheme", "FTPScheme", "Cookies", "ArchiveScheme",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/CLI/Command",
            swiftSettings: strict
        ),
        .executableTarget(name: "loadurl", dependencies: ["LoadURLCommand"], path: "Sources/CLI/Main", swiftSettings: strict),
        // Probes shared by the tests: peak memory, open descriptors, the corpora.
        .target(
            name: "TestSupport",
            dependencies: [
                "Loader", "CZlib", "CBrotliEncoder", "CZstd",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ],
            path: "Tests/Support",
            swiftSettings: strict
        ),
        .testTarget(name: "LoaderTests", dependencies: ["Loader", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "DataSchemeTests", dependencies: ["DataScheme", "Loader", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "FileSchemeTests", dependencies: ["FileScheme", "Loader", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "ConformanceTests", dependencies: ["HandlerConformance", "Loader", "DataScheme", "FileScheme", "TestSupport",
                                                         .product(name: "Crypto", package: "swift-crypto")], swiftSettings: strict),
        .testTarget(
            name: "HTTPSchemeTests",
            dependencies: [
                "HTTPScheme", "Loader", "TestSupport", "HandlerConformance", "CZlib",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "CookiesTests", dependencies: ["Cookies", "Loader", "HTTPScheme", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "DiskStoresTests",
            dependencies: ["DiskStores", "Cookies", "Loader", "HTTPScheme", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        .testTarget(name: "ArchiveSchemeTests", dependencies: ["ArchiveScheme", "Loader", "TestSupport", "HandlerConformance"], swiftSettings: strict),
        .testTarget(name: "FTPSchemeTests", dependencies: ["FTPScheme", "Loader", "TestSupport", "HandlerConformance"], swiftSettings: strict),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "LoadURLCommand", "Loader", "loadurl", "TestSupport", "HTTPScheme", "FTPScheme",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strict
        ),
    ]
)
