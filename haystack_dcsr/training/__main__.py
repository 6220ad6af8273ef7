from haystack_dcsr.training.cli import main

main()
