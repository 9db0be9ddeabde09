// Placeholder; the loopback server lands in its own commit.
public enum LocalImageServerPlaceholder {}
