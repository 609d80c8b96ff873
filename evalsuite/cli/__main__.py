from evalsuite.cli import main

main()
