"""One module per `faircert` subcommand; each exposes `register(subparsers)`."""
