export { bodyErrorOf, errorBody, httpStatusOf, type ErrorBody } from '../http-status.js'
