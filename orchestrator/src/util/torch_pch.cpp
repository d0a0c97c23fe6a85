// Compiles the shared LibTorch precompiled header once; every LibTorch target reuses it.
