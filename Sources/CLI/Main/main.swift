import LoadURLCommand

await LoadURL.main()
