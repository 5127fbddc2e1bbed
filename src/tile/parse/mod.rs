//! The tile-language parser. (Written by the front-end work.)
