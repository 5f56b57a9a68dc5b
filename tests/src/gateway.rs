//! Running the real gateway binary (see below).
