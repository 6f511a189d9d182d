from agentworld.cli import main

main()
