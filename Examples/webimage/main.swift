import WebImage

for (name, version) in LibraryVersions.all {
    print("\(name) \(version)")
}
