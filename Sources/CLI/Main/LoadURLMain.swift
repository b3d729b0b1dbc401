import LoadURLCommand

/// The `loadurl` executable: parses the arguments and runs ``LoadURL``.
@main
enum LoadURLMain {
    static func main() async {
        await LoadURL.mainQuickly(Array(CommandLine.arguments.dropFirst()))
    }
}
