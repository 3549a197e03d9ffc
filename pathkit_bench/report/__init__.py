"""The suite report (`suite`) and its critical-difference diagram (`cd_diagram`)."""
