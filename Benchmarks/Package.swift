// swift-tools-version: 6.0
// The benchmarks: our loader side by side with FoundationNetworking's URLSession and AsyncHTTPClient (in
// this package) and the curl CLI and wrk (run by `run.py`), against the same servers on 127.0.0.1.
// A package of its own, depending on the project by path, so that the project never depends on its peers.
import PackageDescription

let package = Package(
    name: "swift-url-loader-benchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "LoaderBench", targets: ["LoaderBench"]),
        // Preloaded by run.py for the runs that count allocations; never linked into LoaderBench.
        .library(name: "AllocationCounter", type: .dynamic, targets: ["AllocationCounter"]),
    ],
    dependencies: [
        .package(name: "swift-url-loader", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        .target(name: "AllocationCounter"),
        .executableTarget(
            name: "LoaderBench",
            dependencies: [
                .product(name: "Loader", package: "swift-url-loader"),
                .product(name: "StandardSchemes", package: "swift-url-loader"),
                .product(name: "HTTPScheme", package: "swift-url-loader"),
                .product(name: "FTPScheme", package: "swift-url-loader"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
