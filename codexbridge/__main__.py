from codexbridge.cli import main

main()
