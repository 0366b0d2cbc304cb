export { RivuletError } from '@rivulet/contract';
