"""``python -m haystack_dcsr.serve``: the documented command; the server lives in ``haystack_dcsr.haystack1.serve``."""

from haystack_dcsr.haystack1.serve import build_parser, main  # noqa: F401

if __name__ == "__main__":
    main()
