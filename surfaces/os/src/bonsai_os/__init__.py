"""bonsai_os: the assistant the OS ships — a command-line chat with tools on the native wgpu runtime."""

__version__ = "0.1.0"
