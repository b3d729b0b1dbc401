// The URL arguments' globs (``URLGlob``), expanded before anything reads the URLs.
extension LoadURL {
    /// The command with each URL argument's globs expanded into a URL per value, unless `-g`: each takes the
    /// output its argument had (`-o` with `#N` filled in, `-O`, `--remote-name-all`, standard output).
    func expandingGlobs() throws(URLGlob.Malformed) -> LoadURL {
        // Most URLs hold no character a glob needs: a line of thousands of them is not read again.
        guard !globOff, urls.contains(where: URLGlob.mayHoldGlob) else { return self }
        let globs = try urls.map { text throws(URLGlob.Malformed) in URLGlob.mayHoldGlob(text) ? try URLGlob(text) : URLGlob(literal: text) }
        // Brackets of IPv6 addresses only: the line stays as it is.
        guard zip(globs, urls).contains(where: { glob, text in glob.pieces != [.literal(text)] && !text.isEmpty }) else { return self }
        var expanded = self
        expanded.urls = []
        expanded.outputs = []
        expanded.remoteNames = 0
        for (index, glob) in globs.enumerated() {
            let output = outputArgument(index)
            for (url, values) in glob.expanded() {
                expanded.urls.append(url)
                expanded.outputs.append(output == "-" || output == Self.remoteNameSlot ? output : URLGlob.fill(output, with: values))
            }
        }
        return expanded
    }

    /// The output the URL at `index` has, as ``outputs``, `-O` and `--remote-name-all` say: a file name,
    /// ``remoteNameSlot``, or `-` for standard output.
    func outputArgument(_ index: Int) -> String {
        if index < outputs.count { return outputs[index] }
        return remoteNameAll || index - outputs.count < remoteNames ? Self.remoteNameSlot : "-"
    }
}
