"""Storage: atomic files, checksums, the store's reader-writer guard and how engine failures reach clients."""
